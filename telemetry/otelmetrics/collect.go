package otelmetrics

import (
	"context"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// scopeFleet is the value of FleetSource.Scope for a breaker that follows the fleet.
const scopeFleet = "fleet"

// collect is the one callback of the observable instruments: it reads the watched
// breakers, throttles, adaptive limits, fleet and failover, and what events and pushes left, as the
// Prometheus collectors do at scrape time.
func (m *Metrics) collect(_ context.Context, o metric.Observer) error {
	e := &emitter{m: m, o: o, kvs: make([]attribute.KeyValue, 0, 4)}
	m.collectBreakers(e)
	m.collectGauges(e)
	m.collectThrottles(e)
	m.collectLimits(e)
	m.collectModels(e)
	for i := range numInst {
		if r := &instruments[i]; r.read != nil {
			r.read(m, e)
		}
	}
	return nil
}

// collectGauges reports the values other packages push, once they have pushed one: a
// gauge reading 0 before the journal or the failover wrapper ever reported would claim
// a health nobody measured.
func (m *Metrics) collectGauges(e *emitter) {
	now := m.clk.Now()
	m.mu.Lock()
	journalSet, n, oldest := m.journalSet, m.journalN, m.journalOldest
	fallbackSet, fallback := m.fallbackSet, m.fallback
	routes := maps.Clone(m.routes)
	m.mu.Unlock()
	if journalSet {
		e.emit(instJournalPending, float64(n))
		age := 0.0
		if n > 0 && !oldest.IsZero() {
			age = max(0, now.Sub(oldest).Seconds())
		}
		e.emit(instJournalOldestAge, age)
	}
	if fallbackSet {
		e.emit(instFallbackRatio, fallback)
	}
	for r, v := range routes {
		e.emit(instRouteServing, v, r[0], r[1])
	}
}

// collectThrottles reports every watched throttle. Throttles past the series budget
// are folded into dependency="other": the highest share among them, their sheds summed.
func (m *Metrics) collectThrottles(e *emitter) {
	srcs := m.throttleSources.Load()
	if srcs == nil {
		return
	}
	seen := map[string]bool{}
	var otherShare float64
	var otherShed [4]uint64
	folded := false
	for _, src := range *srcs {
		for _, th := range src.Throttles() {
			raw := th.Name()
			if seen[raw] {
				continue
			}
			seen[raw] = true
			label := bound.Sanitize(raw)
			p := th.Probability()
			if label == other || seen["\x00"+label] || !m.tryAdmit(famThrottle, throttleSeries, label) {
				folded = true
				otherShare = max(otherShare, p)
				for i, pr := range throttle.Priorities() {
					otherShed[i] += th.Shed(pr)
				}
				continue
			}
			seen["\x00"+label] = true
			e.emit(instThrottleShare, p, label)
			for _, pr := range throttle.Priorities() {
				e.emit(instThrottleShed, float64(th.Shed(pr)), label, pr.String())
			}
		}
	}
	if folded {
		e.emit(instThrottleShare, otherShare, other)
		for i, pr := range throttle.Priorities() {
			e.emit(instThrottleShed, float64(otherShed[i]), other, pr.String())
		}
	}
}

// collectFleet reports the fleet's counters and, for every breaker the collection
// read, whether it decides alone.
func (m *Metrics) collectFleet(e *emitter, byLabel map[string]*breaker.Breaker, folded []*breaker.Breaker) {
	p := m.fleet.Load()
	if p == nil {
		return
	}
	src := *p
	syncs, failures, outages, commands := src.Counters()
	e.emit(instFleetSyncs, float64(syncs))
	e.emit(instFleetSyncFailures, float64(failures))
	e.emit(instFleetOutages, float64(outages))
	e.emit(instFleetRedisCommands, float64(commands))
	if es, ok := src.(FleetErrorSource); ok {
		for _, r := range bound.SyncErrorRows(es.SyncErrors(), FleetErrorClasses) {
			e.emit(instFleetSyncErrors, r.Count, r.Class)
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
	for _, label := range slices.Sorted(maps.Keys(byLabel)) {
		b := byLabel[label]
		scope := src.Scope(b.Name())
		if scope == "" {
			continue
		}
		if !m.tryAdmit(famBreaker, 1, label, instruments[instFleetLocal].prom) {
			foldedOne(scope)
			continue
		}
		v := 1.0
		if scope == scopeFleet {
			v = 0
		}
		e.emit(instFleetLocal, v, label)
	}
	for _, b := range folded {
		foldedOne(src.Scope(b.Name()))
	}
	if otherAttached {
		e.emit(instFleetLocal, float64(otherLocal), other)
	}
}
