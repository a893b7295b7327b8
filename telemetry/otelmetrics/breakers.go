package otelmetrics

import (
	"maps"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// Probe results and sources, the values of the result and source attributes; those of
// package telemetry.
const (
	probeSucceeded    = "succeeded"
	probeFailed       = "failed"
	probeExpired      = "expired"
	probeSourceHealth = "health_probe"
	probeSourceUser   = "user_call"
)

// transition is one (from, to, cause) combination of agentbreaker.breaker.transitions.
type transition struct {
	from, to breaker.State
	cause    breaker.Cause
}

// automatic are the transitions a breaker makes by itself, reported at zero from the
// first collection so that rate() and increase() see their first increment.
var automatic = []transition{
	{breaker.Closed, breaker.Open, breaker.CauseFailureRate},
	{breaker.Closed, breaker.Open, breaker.CauseSlowCallRate},
	{breaker.Open, breaker.HalfOpen, breaker.CauseCooldownElapsed},
	{breaker.HalfOpen, breaker.Closed, breaker.CauseProbeSucceeded},
	{breaker.HalfOpen, breaker.Open, breaker.CauseProbeFailed},
}

var allStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen, breaker.ForcedClosed}

// depRecord is what events taught us about one breaker. Guarded by Metrics.mu.
type depRecord struct {
	transitions    map[transition]uint64
	probeSucceeded uint64
	probeFailed    uint64
	bySource       map[[2]string]uint64
	extensions     uint64
	downSince      time.Time
	downTotal      time.Duration
	last           breaker.Event // the latest state change, for TransitionDuring
}

func (r *depRecord) clone() depRecord {
	c := *r
	c.transitions = maps.Clone(r.transitions)
	c.bySource = maps.Clone(r.bySource)
	return c
}

func down(s breaker.State) bool { return s == breaker.Open || s == breaker.HalfOpen }

func (r *depRecord) count(e breaker.Event, tr transition) {
	if e.From == e.To && e.Cause == breaker.CauseRetryAfter {
		r.extensions++
		return
	}
	r.transitions[tr]++
	switch e.Cause {
	case breaker.CauseProbeSucceeded:
		r.probeSucceeded++
	case breaker.CauseProbeFailed:
		r.probeFailed++
	}
}

// BreakerEvent records a breaker state change: the transition, probe and cooldown
// counters and the time-open accounting, read at the next collection. Pass it to
// dependencymap.Config.OnStateChange (or breaker.Config.OnStateChange).
func (m *Metrics) BreakerEvent(e breaker.Event) {
	if m == nil {
		return
	}
	name := m.dependency.Value(e.Breaker)
	tr := transition{e.From, e.To, e.Cause}
	own := name != other && m.admit(famBreaker, breakerSeries, name)
	countHere := own
	if own && e.From != e.To && !slices.Contains(automatic, tr) {
		countHere = m.admit(famTransition, 1, name, e.From.String(), e.To.String(), e.Cause.String())
	}
	var source [2]string
	if own && (e.Cause == breaker.CauseProbeSucceeded || e.Cause == breaker.CauseProbeFailed) {
		source = [2]string{probeSourceUser, probeFailed}
		if e.HealthProbe {
			source[0] = probeSourceHealth
		}
		if e.Cause == breaker.CauseProbeSucceeded {
			source[1] = probeSucceeded
		}
		if !m.admit(famTransition, 1, name, instruments[instProbeResults].prom, source[0], source[1]) {
			source = [2]string{}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !countHere {
		m.other.count(e, tr)
	}
	if !own {
		return
	}
	r := m.deps[name]
	if r == nil {
		r = &depRecord{transitions: make(map[transition]uint64)}
		m.deps[name] = r
	}
	if countHere {
		r.count(e, tr)
	}
	if e.From != e.To {
		r.last = e
	}
	if source[0] != "" {
		if r.bySource == nil {
			r.bySource = make(map[[2]string]uint64)
		}
		r.bySource[source]++
	}
	switch {
	case e.From == e.To:
	case !down(e.From) && down(e.To):
		r.downSince = e.At
	case down(e.From) && !down(e.To) && !r.downSince.IsZero():
		r.downTotal += max(0, e.At.Sub(r.downSince))
		r.downSince = time.Time{}
	}
}

// collectBreakers reads every watched breaker and the event counts, as the Prometheus
// telemetry's scrape does: a breaker the budget has no room for, or whose sanitised
// name another already shows, is folded into dependency="other".
func (m *Metrics) collectBreakers(e *emitter) {
	now := m.clk.Now()
	byLabel := make(map[string]*breaker.Breaker)
	rawSeen := make(map[string]bool)
	var folded []*breaker.Breaker
	for _, src := range m.sourceList() {
		for _, b := range src.Breakers() {
			raw := b.Name()
			if rawSeen[raw] {
				continue
			}
			rawSeen[raw] = true
			label := m.dependency.Value(raw)
			if _, dup := byLabel[label]; dup || label == other || !m.tryAdmit(famBreaker, breakerSeries, label) {
				folded = append(folded, b)
				continue
			}
			byLabel[label] = b
		}
	}
	records := make(map[string]depRecord)
	m.mu.Lock()
	for name, r := range m.deps {
		records[name] = r.clone()
	}
	oth := m.other.clone()
	m.mu.Unlock()

	names := slices.Sorted(maps.Keys(byLabel))
	for name := range records {
		if _, ok := byLabel[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		var snap *breaker.Snapshot
		if b := byLabel[name]; b != nil {
			s := b.Snapshot()
			snap = &s
		}
		collectOne(e, name, records[name], snap, now)
	}
	if len(folded) > 0 || len(oth.transitions) > 0 || oth.extensions > 0 {
		collectOther(e, oth, folded, now)
	}
	m.collectFleet(e, byLabel, folded)
}

func emitTransitions(e *emitter, name string, r depRecord) {
	seen := make(map[transition]bool, len(automatic))
	for _, tr := range automatic {
		seen[tr] = true
		e.emit(instTransitions, float64(r.transitions[tr]), name, tr.from.String(), tr.to.String(), tr.cause.String())
	}
	for tr, n := range r.transitions {
		if !seen[tr] {
			e.emit(instTransitions, float64(n), name, tr.from.String(), tr.to.String(), tr.cause.String())
		}
	}
}

// collectOther reports the dependency="other" row: the summed event counts of the
// folded breakers and, for those read now, the number in each state, their summed
// window counts and probes, the longest time open and the longest wait for a probe.
func collectOther(e *emitter, r depRecord, folded []*breaker.Breaker, now time.Time) {
	states := make(map[breaker.State]int)
	var expired, calls, failed, slow, inFlight int64
	var longest, wait time.Duration
	for _, b := range folded {
		s := b.Snapshot()
		states[s.State]++
		expired += s.ExpiredProbes
		calls += s.Window.Calls
		failed += s.Window.Failures
		slow += s.Window.SlowCalls
		inFlight += int64(s.ProbesInFlight)
		wait = max(wait, s.RetryAfter)
		if down(s.State) && !s.OpenedAt.IsZero() {
			longest = max(longest, now.Sub(s.OpenedAt))
		}
	}
	emitTransitions(e, other, r)
	e.emit(instCooldownExtensions, float64(r.extensions), other)
	e.emit(instProbes, float64(r.probeSucceeded), other, probeSucceeded)
	e.emit(instProbes, float64(r.probeFailed), other, probeFailed)
	e.emit(instProbes, float64(expired), other, probeExpired)
	for _, st := range allStates {
		e.emit(instBreakerState, float64(states[st]), other, st.String())
	}
	e.emit(instOpenDuration, longest.Seconds(), other)
	e.emit(instRetryAfter, wait.Seconds(), other)
	e.emit(instWindowCalls, float64(calls), other)
	e.emit(instWindowFailed, float64(failed), other)
	e.emit(instWindowSlow, float64(slow), other)
	e.emit(instProbesInFlight, float64(inFlight), other)
}

func collectOne(e *emitter, name string, r depRecord, snap *breaker.Snapshot, now time.Time) {
	emitTransitions(e, name, r)
	e.emit(instCooldownExtensions, float64(r.extensions), name)
	var expired int64
	if snap != nil {
		expired = snap.ExpiredProbes
	}
	e.emit(instProbes, float64(r.probeSucceeded), name, probeSucceeded)
	e.emit(instProbes, float64(r.probeFailed), name, probeFailed)
	e.emit(instProbes, float64(expired), name, probeExpired)
	for src, n := range r.bySource {
		e.emit(instProbeResults, float64(n), name, src[0], src[1])
	}
	var stretch time.Duration
	if snap != nil && down(snap.State) {
		since := r.downSince
		if since.IsZero() {
			since = snap.OpenedAt
		}
		if !since.IsZero() {
			stretch = max(0, now.Sub(since))
		}
	} else if snap == nil && !r.downSince.IsZero() {
		stretch = max(0, now.Sub(r.downSince))
	}
	e.emit(instOpenSeconds, (r.downTotal + stretch).Seconds(), name)
	if snap == nil {
		return
	}
	e.emit(instOpenDuration, stretch.Seconds(), name)
	for _, s := range allStates {
		v := 0.0
		if s == snap.State {
			v = 1
		}
		e.emit(instBreakerState, v, name, s.String())
	}
	e.emit(instRetryAfter, snap.RetryAfter.Seconds(), name)
	e.emit(instWindowCalls, float64(snap.Window.Calls), name)
	e.emit(instWindowFailed, float64(snap.Window.Failures), name)
	e.emit(instWindowSlow, float64(snap.Window.SlowCalls), name)
	e.emit(instProbesInFlight, float64(snap.ProbesInFlight), name)
}
