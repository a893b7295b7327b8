package telemetry

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// Telemetry adapts agentbreaker's events to Prometheus collectors, slog records and
// span annotations. It implements observe.Observer and prometheus.Collector.
//
// It is safe for concurrent use: its methods are called from every goroutine that runs
// a guarded call, and scrapes run concurrently with them. No method calls user code
// while holding a lock. Every method is a no-op on a nil *Telemetry, so a package may
// keep an optional *Telemetry without checking it.
type Telemetry struct {
	reg prometheus.Registerer
	log *slog.Logger
	clk clock.Clock

	sourceMu sync.Mutex                      // serialises Watch
	sources  atomic.Pointer[[]BreakerSource] // copy-on-write list read by scrapes and lookups
	// throttleSources is the same for throttles (WatchThrottles).
	throttleSources atomic.Pointer[[]ThrottleSource]
	// limitSources is the same for adaptive limits (WatchLimits).
	limitSources atomic.Pointer[[]LimitSource]
	fleet        atomic.Pointer[FleetSource] // fleet mode's counters and scopes, read by scrapes

	budget  *seriesBudget
	started time.Time // when New ran: agentbreaker_start_time_seconds

	mu            sync.Mutex            // guards the fields below
	deps          map[string]*depRecord // by sanitised name; only breakers the budget admitted
	other         depRecord             // what events taught us about the breakers folded into "other"
	journalSet    bool
	journalN      int
	journalOldest time.Time
	fallbackSet   bool
	fallback      float64

	routeMu      sync.Mutex // serialises RouteServing so one route at most reads 1
	serving      [2]string  // model and region of the route serving now
	servingIsSet bool

	dependency, tool, model, region, errorClass, cause, route *labelGuard

	calls         *prometheus.CounterVec
	durations     *prometheus.HistogramVec
	shortCircuits *prometheus.CounterVec
	bulkhead      *prometheus.CounterVec
	retryBudget   *prometheus.CounterVec
	failovers     *prometheus.CounterVec
	routeServing  *prometheus.GaugeVec
	abandoned     *prometheus.GaugeVec
	abandonedAll  *prometheus.CounterVec

	histCost int // series of one call-duration child
}

var (
	_ observe.Observer     = (*Telemetry)(nil)
	_ prometheus.Collector = (*Telemetry)(nil)
)

// New builds the collectors and registers them on cfg.Registerer. It returns a
// *ConfigError for an invalid field, or the registerer's error (for example when
// another Telemetry is already registered there).
func New(cfg Config) (*Telemetry, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Telemetry{
		reg:  cfg.Registerer,
		log:  cfg.Logger,
		clk:  cfg.Clock,
		deps: make(map[string]*depRecord),

		budget:   newSeriesBudget(cfg.MaxSeries, cfg.Logger),
		started:  cfg.Clock.Now(),
		histCost: len(cfg.DurationBuckets) + 3,
	}
	t.other.transitions = make(map[transition]uint64)
	guard := func(name string) *labelGuard { return newLabelGuard(name, cfg.MaxLabelValues, cfg.Logger) }
	t.dependency, t.tool, t.model, t.region = guard("dependency"), guard("tool"), guard("model"), guard("region")
	// The library's own classes and causes pass outside the cap (Config.MaxLabelValues).
	t.errorClass, t.cause = newErrorClassGuard(cfg.MaxLabelValues, cfg.Logger), newCauseGuard(cfg.MaxLabelValues, cfg.Logger)
	t.route = guard("from/to")

	t.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameCalls,
		Help: "Guarded calls sent to their dependency, by classified outcome and error class.",
	}, []string{"dependency", "tool", "outcome", "error_class"})
	t.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    nameCallDuration,
		Help:    "Duration of guarded calls sent to their dependency, by classified outcome.",
		Buckets: cfg.DurationBuckets,
	}, []string{"dependency", "outcome"})
	t.shortCircuits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameShortCircuits,
		Help: "Calls answered locally because their breaker did not admit them, by the state that rejected them.",
	}, []string{"dependency", "tool", "state"})
	t.bulkhead = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameBulkheadRejections,
		Help: "Calls refused because the dependency's bulkhead was full.",
	}, []string{"dependency"})
	t.retryBudget = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameRetryBudgetExhausted,
		Help: "Retries refused because the dependency's retry budget was spent.",
	}, []string{"dependency"})
	t.failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameModelFailovers,
		Help: "Model calls moved from one route (model@region) to the next, by cause.",
	}, []string{"from", "to", "cause"})
	t.routeServing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: nameRouteServing,
		Help: "1 for the model route serving calls now, 0 for routes that served before.",
	}, []string{"model", "region"})

	t.abandoned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: nameAbandoned,
		Help: "Tool calls that ran past their timeout and are still running: the wrapper answered without them and their goroutine is stuck until the tool returns.",
	}, []string{"tool"})
	t.abandonedAll = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameAbandonedTotal,
		Help: "Tool calls abandoned after their timeout because the tool ignored its context.",
	}, []string{"tool"})

	if cfg.Breakers != nil {
		t.Watch(cfg.Breakers)
	}
	if cfg.Fleet != nil {
		t.WatchFleet(cfg.Fleet)
	}
	if err := cfg.Registerer.Register(t); err != nil {
		return nil, err
	}
	return t, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Telemetry {
	t, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return t
}

// Watch adds a source of breakers read at every scrape. A breaker whose name an earlier
// source already listed is skipped. Watch is safe to call at any time.
func (t *Telemetry) Watch(src BreakerSource) {
	if t == nil || src == nil {
		return
	}
	t.sourceMu.Lock()
	defer t.sourceMu.Unlock()
	var next []BreakerSource
	if cur := t.sources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	t.sources.Store(&next)
}

func (t *Telemetry) sourceList() []BreakerSource {
	if s := t.sources.Load(); s != nil {
		return *s
	}
	return nil
}

// Unregister removes the collectors from the registerer they were registered on, so a
// process can replace its Telemetry. It reports whether they were registered.
func (t *Telemetry) Unregister() bool {
	if t == nil {
		return false
	}
	return t.reg.Unregister(t)
}

// Describe implements prometheus.Collector.
func (t *Telemetry) Describe(ch chan<- *prometheus.Desc) {
	t.calls.Describe(ch)
	t.durations.Describe(ch)
	t.shortCircuits.Describe(ch)
	t.bulkhead.Describe(ch)
	t.retryBudget.Describe(ch)
	t.failovers.Describe(ch)
	t.routeServing.Describe(ch)
	t.abandoned.Describe(ch)
	t.abandonedAll.Describe(ch)
	t.budget.overflow.Describe(ch)
	for _, d := range scrapeDescs {
		ch <- d
	}
	ch <- descThrottleShare
	ch <- descThrottleShed
	ch <- descLimit
	ch <- descLimitFloor
	ch <- descLimitNoLoad
	ch <- descLimitRefused
	for _, d := range fleetDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Breaker state is read now, from the watched
// sources. Whatever names it was fed, a scrape holds at most Config.SeriesBound()
// series and every label value is valid UTF-8 without control or format characters.
func (t *Telemetry) Collect(ch chan<- prometheus.Metric) {
	t.calls.Collect(ch)
	t.durations.Collect(ch)
	t.shortCircuits.Collect(ch)
	t.bulkhead.Collect(ch)
	t.retryBudget.Collect(ch)
	t.failovers.Collect(ch)
	t.routeServing.Collect(ch)
	t.abandoned.Collect(ch)
	t.abandonedAll.Collect(ch)
	t.budget.overflow.Collect(ch)
	t.collectBreakers(ch)
	t.collectGauges(ch)
	t.collectThrottles(ch)
	t.collectLimits(ch)
}
