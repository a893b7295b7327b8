package metrics

import (
	"context"
	"maps"
	"slices"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// scopeFleet is the value of FleetSource.Scope for a breaker that follows the fleet.
const scopeFleet = "fleet"

// Collect reports every row read at collection time to o: the watched breakers,
// throttles, adaptive limits, fleet and failover, and what events and pushes left.
func (s *State) Collect(o Observer) {
	s.collectBreakers(o)
	s.pollJournal()
	s.collectGauges(o)
	s.collectThrottles(o)
	s.collectLimits(o)
	s.collectModels(o)
	o.Observe(StartTime, float64(s.started.UnixNano())/1e9)
	for f := range numFamilies {
		o.Observe(SeriesOverflow, float64(s.budget.Folded(uint8(f))), Rows[familyRows[f]].Prom)
	}
}

// toolLister is a BreakerSource that also names each dependency's tools
// (*dependencymap.Map does).
type toolLister interface{ Tools(key string) []string }

// prime puts at 0 the call-path series whose labels are known in advance, as
// client_golang advises, so that rate() and alerts work from the first scrape rather
// than from the first event: the bulkhead and retry-budget counters of every watched
// dependency, and the abandoned-call gauge and counter of every tool a source names.
// It runs after the breakers are read, so a breaker's own series come first: a
// primed series costs one series of the budget the first time, and past it (or for a
// breaker folded into "other") the "other" row is primed instead, as the event
// would be counted.
func (s *State) prime(byLabel map[string]*breaker.Breaker) {
	for _, src := range load(&s.sources) {
		tools, _ := src.(toolLister)
		for _, b := range src.Breakers() {
			dep := s.dependency.Value(b.Name())
			if byLabel[dep] != b {
				dep = Other // folded, or an earlier source's breaker of that name
			}
			s.primeOne(famBulkhead, Bulkhead, dep)
			s.primeOne(famBudget, RetryBudget, dep)
			if tools == nil {
				continue
			}
			for _, name := range tools.Tools(b.Name()) {
				tool := s.tool.Value(name)
				s.primeOne(famAbandonedTotal, AbandonedTotal, tool)
				s.primeOne(famAbandoned, Abandoned, tool)
			}
		}
	}
}

func (s *State) primeOne(f family, id ID, label string) {
	if label != Other && !s.tryAdmit(f, 1, label) {
		label = Other
	}
	s.rec.Record(context.Background(), id, 0, [4]string{label})
}

// collectGauges reports the values other packages push, once they have pushed one: a
// gauge reading 0 before the journal or the failover wrapper ever reported would
// claim a health nobody measured.
func (s *State) collectGauges(o Observer) {
	now := s.clk.Now()
	s.mu.Lock()
	journalSet, n, oldest := s.journalSet, s.journalN, s.journalOldest
	fallbackSet, fallback := s.fallbackSet, s.fallback
	routes := maps.Clone(s.routes)
	s.mu.Unlock()
	if journalSet {
		o.Observe(JournalPending, float64(n))
		age := 0.0
		if n > 0 && !oldest.IsZero() {
			age = max(0, now.Sub(oldest).Seconds())
		}
		o.Observe(JournalOldestAge, age)
	}
	if fallbackSet {
		o.Observe(FallbackRatio, fallback)
	}
	for r, v := range routes {
		o.Observe(RouteServing, v, r[0], r[1])
	}
}

// named is a throttle or an adaptive limit: what collectNamed folds by name.
type named interface{ Name() string }

// collectNamed reports every item of the lists once, under its sanitised name while
// the budget admits cost series for it, and folds the others (past the budget, or
// whose name is "other" or repeats an earlier one) with fold; it reports whether it
// folded any.
func collectNamed[T named](s *State, lists [][]T, f family, cost int, show func(T, string), fold func(T)) bool {
	seen := map[string]bool{}
	folded := false
	for _, list := range lists {
		for _, it := range list {
			raw := it.Name()
			if seen[raw] {
				continue
			}
			seen[raw] = true
			label := bound.Sanitize(raw)
			if label == Other || seen["\x00"+label] || !s.tryAdmit(f, cost, label) {
				folded = true
				fold(it)
				continue
			}
			seen["\x00"+label] = true
			show(it, label)
		}
	}
	return folded
}

// collectThrottles reports every watched throttle. Throttles past the series budget
// are folded into dependency="other": the highest share among them, their sheds summed.
func (s *State) collectThrottles(o Observer) {
	var lists [][]*throttle.Throttle
	for _, src := range load(&s.throttleSources) {
		lists = append(lists, src.Throttles())
	}
	var share float64
	var shed [4]uint64
	show := func(th *throttle.Throttle, label string) {
		o.Observe(ThrottleShare, th.Probability(), label)
		for _, pr := range throttle.Priorities() {
			o.Observe(ThrottleShed, float64(th.Shed(pr)), label, pr.String())
		}
	}
	fold := func(th *throttle.Throttle) {
		share = max(share, th.Probability())
		for i, pr := range throttle.Priorities() {
			shed[i] += th.Shed(pr)
		}
	}
	if collectNamed(s, lists, famThrottle, throttleSeries, show, fold) {
		o.Observe(ThrottleShare, share, Other)
		for i, pr := range throttle.Priorities() {
			o.Observe(ThrottleShed, float64(shed[i]), Other, pr.String())
		}
	}
}

// limitReading is what one adaptive limit (or the "other" row) reports.
type limitReading struct {
	limit, floor, noLoad float64
	refused              [4]uint64
}

func readLimit(l *adaptivelimit.Limiter) limitReading {
	lo, _ := l.Bounds()
	r := limitReading{limit: float64(l.Limit()), floor: float64(lo), noLoad: l.NoLoad().Seconds()}
	for i, pr := range throttle.Priorities() {
		r.refused[i] = l.Refused(pr)
	}
	return r
}

func (r limitReading) observe(o Observer, label string) {
	o.Observe(AdaptiveLimit, r.limit, label)
	o.Observe(AdaptiveLimitMin, r.floor, label)
	o.Observe(AdaptiveNoLoad, r.noLoad, label)
	for i, pr := range throttle.Priorities() {
		o.Observe(AdaptiveRefused, float64(r.refused[i]), label, pr.String())
	}
}

// collectLimits reports every watched adaptive limit. Limits past the series budget
// are folded into dependency="other": the lowest limit and floor among them, the
// highest no-load latency, their refusals summed.
func (s *State) collectLimits(o Observer) {
	var lists [][]*adaptivelimit.Limiter
	for _, src := range load(&s.limitSources) {
		lists = append(lists, src.Limiters())
	}
	var other limitReading
	first := true
	fold := func(l *adaptivelimit.Limiter) {
		r := readLimit(l)
		if first || r.limit < other.limit {
			other.limit = r.limit
		}
		if first || r.floor < other.floor {
			other.floor = r.floor
		}
		other.noLoad = max(other.noLoad, r.noLoad)
		for i := range r.refused {
			other.refused[i] += r.refused[i]
		}
		first = false
	}
	if collectNamed(s, lists, famLimit, limitSeries, func(l *adaptivelimit.Limiter, label string) { readLimit(l).observe(o, label) }, fold) {
		other.observe(o, Other)
	}
}

// collectFleet reports the fleet's counters and, for every breaker the collection
// read (admitted under its own label, or folded into "other"), whether it decides
// alone. A breaker's row costs one series of the budget the first time; past it the
// breaker counts in the "other" row.
func (s *State) collectFleet(o Observer, byLabel map[string]*breaker.Breaker, folded []*breaker.Breaker) {
	p := s.fleet.Load()
	if p == nil {
		return
	}
	src := *p
	syncs, failures, outages, commands := src.Counters()
	o.Observe(FleetSyncs, float64(syncs))
	o.Observe(FleetSyncFailures, float64(failures))
	o.Observe(FleetOutages, float64(outages))
	o.Observe(FleetRedisCommands, float64(commands))
	if es, ok := src.(FleetErrorSource); ok {
		// A source may be user code: its classes are sanitised like any label, and
		// two that sanitise to the same text are summed into one row.
		for _, r := range bound.SyncErrorRows(es.SyncErrors(), FleetErrorClasses) {
			o.Observe(FleetSyncErrors, r.Count, r.Class)
		}
	}
	otherLocal, otherAttached := 0, false
	foldedOne := func(scope string) {
		if scope == "" {
			return
		}
		otherAttached = true
		if scope != scopeFleet {
			otherLocal++
		}
	}
	// In label order, so that which rows the budget admits does not depend on map order.
	for _, label := range slices.Sorted(maps.Keys(byLabel)) {
		scope := src.Scope(byLabel[label].Name())
		if scope == "" {
			continue // not attached to the fleet: no row
		}
		if !s.tryAdmit(famBreaker, 1, label, Rows[FleetLocal].Prom) {
			foldedOne(scope)
			continue
		}
		v := 1.0 // "local", or anything but "fleet": the breaker does not follow the fleet
		if scope == scopeFleet {
			v = 0
		}
		o.Observe(FleetLocal, v, label)
	}
	for _, b := range folded {
		foldedOne(src.Scope(b.Name()))
	}
	if otherAttached {
		o.Observe(FleetLocal, float64(otherLocal), Other)
	}
}

// collectModels reports the gauges read from the watched Failover.
func (s *State) collectModels(o Observer) {
	f := s.failover.Load()
	if f == nil {
		return
	}
	st := f.Stats()
	o.Observe(FallbackRatio, st.Window.FallbackShare)
	for _, r := range f.Routes() {
		md, reg := s.model.Value(r.Model), s.region.Value(r.Region)
		// Routes are configured, so they are few; a route the spent series budget
		// refuses is left out rather than folded, which would make two routes one
		// series.
		if !s.tryAdmit(famRouteServing, 1, md, reg) {
			continue
		}
		v := 0.0
		if r.Name == st.Serving.Name {
			v = 1
		}
		o.Observe(RouteServing, v, md, reg)
	}
}
