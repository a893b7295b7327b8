package otelmetrics

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// ScopeName is the instrumentation scope of the meter the instruments are made on.
const ScopeName = "github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"

// family identifies a group of series in the series budget. The families and their
// names are those of the Prometheus telemetry, so both charge and fold alike and the
// metric attribute of agentbreaker.telemetry.series_overflow has the same values.
type family uint8

const (
	famBreaker    family = iota // every series of one breaker, read at collection time
	famTransition               // a transition the breaker does not make by itself (operator, ...)
	famCalls
	famDurations
	famShortCircuits
	famBulkhead
	famBudget
	famFailovers
	famRouteServing
	famAbandoned
	famAbandonedTotal
	famThrottle // every series of one throttle, read at collection time
	famLimit    // every series of one adaptive limit, read at collection time
	numFamilies
)

// familyNames are the values of the metric attribute of
// agentbreaker.telemetry.series_overflow: the Prometheus names, as package telemetry
// has them (a test checks they are rows' prom names).
var familyNames = [numFamilies]string{
	famBreaker:        "agentbreaker_breaker_state",
	famTransition:     "agentbreaker_breaker_transitions_total",
	famCalls:          "agentbreaker_calls_total",
	famDurations:      "agentbreaker_call_duration_seconds",
	famShortCircuits:  "agentbreaker_short_circuits_total",
	famBulkhead:       "agentbreaker_bulkhead_rejections_total",
	famBudget:         "agentbreaker_retry_budget_exhausted_total",
	famFailovers:      "agentbreaker_model_failovers_total",
	famRouteServing:   "agentbreaker_model_route_serving",
	famAbandoned:      "agentbreaker_tool_calls_abandoned",
	famAbandonedTotal: "agentbreaker_tool_calls_abandoned_total",
	famThrottle:       "agentbreaker_throttle_shed_share",
	famLimit:          "agentbreaker_adaptive_limit",
}

// breakerSeries is how many series one breaker exports, as in package telemetry: 5
// state, 8 single gauges and counters, the 5 automatic transitions and 3 probe results.
const breakerSeries = 5 + 8 + 5 + 3

// throttleSeries is how many series one throttle exports: the share and the shed
// count of each of the four priorities.
const throttleSeries = 1 + 4

// limitSeries is how many series one adaptive limit exports, as in package telemetry:
// the limit, its floor, the measured no-load latency and the refusals of each of the
// four priorities.
const limitSeries = 3 + 4

// Metrics reports what agentbreaker sees as OpenTelemetry instruments on a
// caller-supplied [metric.MeterProvider]: the measurements of the Prometheus telemetry
// (package telemetry), named so that OpenTelemetry's Prometheus exporter gives them
// the Prometheus names, under the same label caps and series budget. It implements
// observe.Observer and observe.Spans, and is given where a *telemetry.Telemetry would
// be (callbacks, modelfailover through ModelObserver, tooltimeout.Config.OnAbandon,
// the breakers' OnStateChange, the journal watcher).
//
// It is safe for concurrent use: its methods are called from every goroutine that runs
// a guarded call, and collections run concurrently with them. Counting a call costs
// one read-locked lookup per label and no allocation once its series has been
// recorded. Every method is a no-op on a nil *Metrics.
type Metrics struct {
	log *slog.Logger
	clk clock.Clock

	sourceMu        sync.Mutex
	sources         atomic.Pointer[[]BreakerSource]
	throttleSources atomic.Pointer[[]ThrottleSource]
	limitSources    atomic.Pointer[[]LimitSource]
	fleet           atomic.Pointer[FleetSource]
	failover        atomic.Pointer[modelfailover.Failover]

	budget  *bound.Budget
	started time.Time

	mu            sync.Mutex            // guards the fields below
	deps          map[string]*depRecord // by sanitised name; only breakers the budget admitted
	other         depRecord
	journalSet    bool
	journalN      int
	journalOldest time.Time
	fallbackSet   bool
	fallback      float64
	routes        map[[2]string]float64 // RouteServing's gauge values
	serving       [2]string
	servingIsSet  bool

	dependency, tool, model, region, errorClass, cause, route *bound.Guard

	counters    [numInst]metric.Float64Counter
	upDowns     [numInst]metric.Float64UpDownCounter
	histograms  [numInst]metric.Float64Histogram
	observables [numInst]metric.Float64Observable
	keys        [numInst][]attribute.Key // each row's attribute keys, read by emitter.emit
	reg         metric.Registration
	opts        optionCache

	histCost int
	model1   sync.Once
	modelObs *ModelObserver
}

var (
	_ observe.Observer = (*Metrics)(nil)
	_ observe.Spans    = (*Metrics)(nil)
)

// New creates the instruments on cfg.MeterProvider's meter (named ScopeName) and
// registers their collection callback. It returns a *ConfigError for an invalid field,
// or the meter's error.
func New(cfg Config) (*Metrics, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Metrics{
		log:      cfg.Logger,
		clk:      cfg.Clock,
		deps:     make(map[string]*depRecord),
		routes:   make(map[[2]string]float64),
		budget:   bound.NewBudget(cfg.MaxSeries, familyNames[:], cfg.Logger),
		started:  cfg.Clock.Now(),
		histCost: len(cfg.DurationBuckets) + 3,
	}
	m.opts.m = make(map[bound.Key]*options)
	m.other.transitions = make(map[transition]uint64)
	guard := func(name string) *bound.Guard { return bound.NewGuard(name, cfg.MaxLabelValues, cfg.Logger) }
	m.dependency, m.tool, m.model, m.region = guard("dependency"), guard("tool"), guard("model"), guard("region")
	m.errorClass = bound.NewFixedGuard("error_class", cfg.MaxLabelValues, cfg.Logger, bound.ErrorClasses())
	m.cause = bound.NewFixedGuard("cause", cfg.MaxLabelValues, cfg.Logger, bound.Causes())
	m.route = guard("from/to")
	meter := cfg.MeterProvider.Meter(ScopeName)
	if err := m.makeInstruments(meter, cfg.DurationBuckets); err != nil {
		return nil, err
	}
	if cfg.Breakers != nil {
		m.Watch(cfg.Breakers)
	}
	if cfg.Throttles != nil {
		m.WatchThrottles(cfg.Throttles)
	}
	if cfg.Limits != nil {
		m.WatchLimits(cfg.Limits)
	}
	if cfg.Fleet != nil {
		m.WatchFleet(cfg.Fleet)
	}
	return m, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Metrics {
	m, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return m
}

// Close unregisters the collection callback: the observable instruments report
// nothing more. The synchronous ones keep what they counted.
func (m *Metrics) Close() error {
	if m == nil || m.reg == nil {
		return nil
	}
	return m.reg.Unregister()
}

// Watch adds a source of breakers read at every collection. A breaker whose name an
// earlier source already listed is skipped. It is safe to call at any time.
func (m *Metrics) Watch(src BreakerSource) {
	if m == nil || src == nil {
		return
	}
	m.sourceMu.Lock()
	defer m.sourceMu.Unlock()
	var next []BreakerSource
	if cur := m.sources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	m.sources.Store(&next)
}

// WatchThrottles adds a source of throttles read at every collection. It is safe to
// call at any time.
func (m *Metrics) WatchThrottles(src ThrottleSource) {
	if m == nil || src == nil {
		return
	}
	m.sourceMu.Lock()
	defer m.sourceMu.Unlock()
	var next []ThrottleSource
	if cur := m.throttleSources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	m.throttleSources.Store(&next)
}

// WatchFleet reads src at every collection; a later call replaces it, nil stops the
// fleet instruments.
func (m *Metrics) WatchFleet(src FleetSource) {
	if m == nil {
		return
	}
	if src == nil {
		m.fleet.Store(nil)
		return
	}
	m.fleet.Store(&src)
}

func (m *Metrics) sourceList() []BreakerSource {
	if s := m.sources.Load(); s != nil {
		return *s
	}
	return nil
}

// admit asks the series budget for the series of family f with these labels.
func (m *Metrics) admit(f family, cost int, labels ...string) bool {
	k := bound.Key{Fam: uint8(f)}
	copy(k.Labels[:], labels)
	return m.budget.Admit(k, cost)
}

func (m *Metrics) tryAdmit(f family, cost int, labels ...string) bool {
	k := bound.Key{Fam: uint8(f)}
	copy(k.Labels[:], labels)
	return m.budget.TryAdmit(k, cost)
}

// admitOne is admit for a family with a single name label: it returns the label, or
// "other" when the budget refuses the series.
func (m *Metrics) admitOne(f family, label string) string {
	if !m.admit(f, 1, label) {
		return bound.Other
	}
	return label
}
