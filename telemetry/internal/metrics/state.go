package metrics

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/nilness"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// Other replaces label values past a cap.
const Other = bound.Other

// Recorder takes the measurements of the rows fed on the call path (Counter, UpDown, Histogram), on the call
// path: it adds v to (or, for a histogram, records v in) the series of row id with
// these labels, in the row's label order.
type Recorder interface {
	Record(ctx context.Context, id ID, v float64, labels [4]string)
}

// Observer takes the values of the other rows at collection time.
type Observer interface {
	Observe(id ID, v float64, labels ...string)
}

// State is what both exporters keep and read: it is safe for concurrent use, and no
// method calls user code while holding a lock.
type State struct {
	log *slog.Logger
	clk clock.Clock
	rec Recorder

	sourceMu        sync.Mutex // serialises the Watch methods
	sources         atomic.Pointer[[]BreakerSource]
	throttleSources atomic.Pointer[[]ThrottleSource]
	limitSources    atomic.Pointer[[]LimitSource]
	fleet           atomic.Pointer[FleetSource]
	failover        atomic.Pointer[modelfailover.Failover]

	budget  *bound.Budget
	started time.Time

	mu            sync.Mutex            // guards the fields below
	deps          map[string]*depRecord // by sanitised name; only breakers the budget admitted
	other         depRecord             // the breakers folded into "other"
	journalSet    bool
	journalN      int
	journalOldest time.Time
	fallbackSet   bool
	fallback      float64
	routes        map[[2]string]float64 // RouteServing's gauge values
	serving       [2]string
	servingIsSet  bool

	dependency, tool, model, region, errorClass, cause, route *bound.Guard

	histCost int // series of one call-duration child

	model1   sync.Once
	modelObs *ModelObserver

	wire wiring
}

// New returns the state of one exporter, which records through rec.
func New(cfg Config, rec Recorder) *State {
	s := &State{
		log:      cfg.Logger,
		clk:      cfg.Clock,
		rec:      rec,
		deps:     make(map[string]*depRecord),
		other:    depRecord{transitions: make(map[transition]uint64)},
		routes:   make(map[[2]string]float64),
		budget:   bound.NewBudget(cfg.MaxSeries, familyNames(), cfg.Logger),
		started:  cfg.Clock.Now(),
		histCost: len(cfg.DurationBuckets) + 3,
	}
	guard := func(name string) *bound.Guard { return bound.NewGuard(name, cfg.MaxLabelValues, cfg.Logger) }
	s.dependency, s.tool, s.model, s.region = guard("dependency"), guard("tool"), guard("model"), guard("region")
	s.route = guard("from/to")
	// The library's own classes and causes pass outside the cap (MaxLabelValues), on
	// both paths: an alert on error_class="http_5xx" or cause="http_5xx" never reads
	// "other" because a classifier invented names first.
	s.errorClass = bound.NewFixedGuard("error_class", cfg.MaxLabelValues, cfg.Logger, bound.ErrorClasses())
	s.cause = bound.NewFixedGuard("cause", cfg.MaxLabelValues, cfg.Logger, bound.Causes())
	return s
}

// add appends src to a copy-on-write list.
func add[T any](mu *sync.Mutex, list *atomic.Pointer[[]T], src T) {
	mu.Lock()
	defer mu.Unlock()
	var next []T
	if cur := list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	list.Store(&next)
}

func load[T any](list *atomic.Pointer[[]T]) []T {
	if s := list.Load(); s != nil {
		return *s
	}
	return nil
}

// Watch adds a source of breakers read at every collection.
func (s *State) Watch(src BreakerSource) {
	if s == nil || src == nil {
		return
	}
	add(&s.sourceMu, &s.sources, src)
}

// WatchThrottles adds a source of throttles read at every collection.
func (s *State) WatchThrottles(src ThrottleSource) {
	if s == nil || src == nil {
		return
	}
	add(&s.sourceMu, &s.throttleSources, src)
}

// WatchLimits adds a source of adaptive limits read at every collection.
func (s *State) WatchLimits(src LimitSource) {
	if s == nil || src == nil {
		return
	}
	add(&s.sourceMu, &s.limitSources, src)
}

// WatchFleet reads src at every collection; nil, or a nil *fleet.Fleet (fleet mode
// off), stops the fleet rows.
func (s *State) WatchFleet(src FleetSource) {
	if s == nil {
		return
	}
	if nilness.Absent(src) {
		s.fleet.Store(nil)
		return
	}
	s.fleet.Store(&src)
}

// BreakerInfo returns the current state and policy version of a dependency's breaker,
// or empty strings when no watched source knows it.
func (s *State) BreakerInfo(dependency string) (state, policyVersion string) {
	for _, src := range load(&s.sources) {
		if b, ok := src.Get(dependency); ok && b != nil {
			return b.State().String(), b.Policy().Version
		}
	}
	return "", ""
}
