package metrics

import (
	"maps"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// Probe results and sources, the values of the result and source labels.
const (
	ProbeSucceeded    = "succeeded"
	ProbeFailed       = "failed"
	ProbeExpired      = "expired"
	ProbeSourceHealth = "health_probe"
	ProbeSourceUser   = "user_call"
)

// transition is one (from, to, cause) combination of agentbreaker_breaker_transitions_total.
type transition struct {
	from, to breaker.State
	cause    breaker.Cause
}

// automatic are the transitions a breaker makes by itself. They are exported at zero
// from the first collection, so that rate() and increase() see their first
// increment: a series born at 1 has no earlier sample to differ from.
var automatic = []transition{
	{breaker.Closed, breaker.Open, breaker.CauseFailureRate},
	{breaker.Closed, breaker.Open, breaker.CauseSlowCallRate},
	{breaker.Open, breaker.HalfOpen, breaker.CauseCooldownElapsed},
	{breaker.HalfOpen, breaker.Closed, breaker.CauseProbeSucceeded},
	{breaker.HalfOpen, breaker.Open, breaker.CauseProbeFailed},
}

// allStates are the values of the state label, in a fixed order.
var allStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen, breaker.ForcedClosed}

// depRecord is what events taught us about one breaker. Guarded by State.mu.
type depRecord struct {
	transitions    map[transition]uint64
	probeSucceeded uint64
	probeFailed    uint64
	// bySource counts the settled probes by [source, result].
	bySource   map[[2]string]uint64
	extensions uint64
	// downSince is when the current open (or half-open) stretch began; zero outside one.
	downSince time.Time
	// downTotal sums the stretches that ended.
	downTotal time.Duration
	// last is the latest state change, for TransitionDuring.
	last breaker.Event
}

func (r *depRecord) clone() depRecord {
	c := *r
	c.transitions = maps.Clone(r.transitions)
	c.bySource = maps.Clone(r.bySource)
	return c
}

// down reports whether a state counts as "open" for the time-open metrics: the breaker
// opened by itself and has not closed since. Forced open is an operator's choice.
func down(s breaker.State) bool { return s == breaker.Open || s == breaker.HalfOpen }

// count adds one event to the record's counts.
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

// BreakerEvent counts the event in its breaker's record, or in the "other" record
// when the series budget has no room for the breaker. A transition the breaker does
// not make by itself costs one more series the first time; past the budget it is
// counted under "other", while the breaker's own time-open accounting goes on.
func (s *State) BreakerEvent(e breaker.Event) {
	if s == nil {
		return
	}
	name := s.dependency.Value(e.Breaker)
	tr := transition{e.From, e.To, e.Cause}
	own := name != Other && s.admit(famBreaker, breakerSeries, name)
	countHere := own
	if own && e.From != e.To && !slices.Contains(automatic, tr) {
		countHere = s.admit(famTransition, 1, name, e.From.String(), e.To.String(), e.Cause.String())
	}
	// A settled probe, by source: one series per (source, result) the first time it
	// happens, within the transitions' share of the budget.
	var source [2]string
	if own && (e.Cause == breaker.CauseProbeSucceeded || e.Cause == breaker.CauseProbeFailed) {
		source = [2]string{ProbeSourceUser, ProbeFailed}
		if e.HealthProbe {
			source[0] = ProbeSourceHealth
		}
		if e.Cause == breaker.CauseProbeSucceeded {
			source[1] = ProbeSucceeded
		}
		if !s.admit(famTransition, 1, name, Rows[ProbeResults].Prom, source[0], source[1]) {
			source = [2]string{}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !countHere {
		s.other.count(e, tr)
	}
	if !own {
		return
	}
	r := s.deps[name]
	if r == nil {
		r = &depRecord{transitions: make(map[transition]uint64)}
		s.deps[name] = r
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

// lastTransition returns the dependency's latest breaker state change, or a zero
// Event when none was recorded (a breaker folded into "other" has no record).
func (s *State) lastTransition(dependency string) breaker.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.deps[s.dependency.Value(dependency)]; r != nil {
		return r.last
	}
	return breaker.Event{}
}

// collectBreakers reads every watched breaker and the event counts. A breaker the
// series budget has no room for, or whose sanitised name another breaker already
// shows (or is "other"), is folded into the dependency="other" row.
func (s *State) collectBreakers(o Observer) {
	now := s.clk.Now()
	byLabel := make(map[string]*breaker.Breaker)
	rawSeen := make(map[string]bool)
	var folded []*breaker.Breaker
	for _, src := range load(&s.sources) {
		for _, b := range src.Breakers() {
			raw := b.Name()
			if rawSeen[raw] {
				continue // an earlier source listed it
			}
			rawSeen[raw] = true
			label := s.dependency.Value(raw) // "other" past the label cap
			if _, dup := byLabel[label]; dup || label == Other || !s.tryAdmit(famBreaker, breakerSeries, label) {
				folded = append(folded, b)
				continue
			}
			byLabel[label] = b
		}
	}
	records := make(map[string]depRecord)
	s.mu.Lock()
	for name, r := range s.deps {
		records[name] = r.clone()
	}
	oth := s.other.clone()
	s.mu.Unlock()

	names := slices.Sorted(maps.Keys(byLabel))
	for name := range records {
		if _, ok := byLabel[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		var snap *breaker.Snapshot
		if b := byLabel[name]; b != nil {
			sn := b.Snapshot()
			snap = &sn
		}
		collectOne(o, name, records[name], snap, now)
	}
	if len(folded) > 0 || len(oth.transitions) > 0 || oth.extensions > 0 {
		collectOther(o, oth, folded, now)
	}
	s.collectFleet(o, byLabel, folded)
	s.prime(byLabel)
}

func observeTransitions(o Observer, name string, r depRecord) {
	seen := make(map[transition]bool, len(automatic))
	for _, tr := range automatic {
		seen[tr] = true
		o.Observe(Transitions, float64(r.transitions[tr]), name, tr.from.String(), tr.to.String(), tr.cause.String())
	}
	for tr, n := range r.transitions {
		if !seen[tr] {
			o.Observe(Transitions, float64(n), name, tr.from.String(), tr.to.String(), tr.cause.String())
		}
	}
}

// observeCounts reports a row's event counts and probe results.
func observeCounts(o Observer, name string, r depRecord, expired int64) {
	observeTransitions(o, name, r)
	o.Observe(CooldownExtensions, float64(r.extensions), name)
	o.Observe(Probes, float64(r.probeSucceeded), name, ProbeSucceeded)
	o.Observe(Probes, float64(r.probeFailed), name, ProbeFailed)
	o.Observe(Probes, float64(expired), name, ProbeExpired)
}

// observeReadings reports what a row's breakers read now.
func observeReadings(o Observer, name string, states func(breaker.State) float64, open, wait time.Duration, w breaker.Counts, inFlight int64) {
	for _, st := range allStates {
		o.Observe(BreakerState, states(st), name, st.String())
	}
	o.Observe(OpenDuration, open.Seconds(), name)
	o.Observe(RetryAfter, wait.Seconds(), name)
	o.Observe(WindowCalls, float64(w.Calls), name)
	o.Observe(WindowFailed, float64(w.Failures), name)
	o.Observe(WindowSlow, float64(w.SlowCalls), name)
	o.Observe(ProbesInFlight, float64(inFlight), name)
}

// collectOther reports the dependency="other" row: the event counts of the breakers
// the budget folded, summed, and for the folded breakers read now, the number in each
// state, the sums of their window counts and probes, the longest time open and the
// longest wait for a probe. It has no open_seconds_total: a sum over breakers that
// come and go would not be a counter.
func collectOther(o Observer, r depRecord, folded []*breaker.Breaker, now time.Time) {
	states := make(map[breaker.State]int)
	version := "" // the folded breakers' policy version, or "mixed" when they differ
	var expired, inFlight int64
	var w breaker.Counts
	var longest, wait time.Duration
	for i, b := range folded {
		sn := b.Snapshot()
		states[sn.State]++
		if i == 0 {
			version = sn.PolicyVersion
		} else if sn.PolicyVersion != version {
			version = "mixed"
		}
		expired += sn.ExpiredProbes
		w.Calls += sn.Window.Calls
		w.Failures += sn.Window.Failures
		w.SlowCalls += sn.Window.SlowCalls
		inFlight += int64(sn.ProbesInFlight)
		wait = max(wait, sn.RetryAfter)
		if down(sn.State) && !sn.OpenedAt.IsZero() {
			longest = max(longest, now.Sub(sn.OpenedAt))
		}
	}
	observeCounts(o, Other, r, expired)
	if len(folded) > 0 {
		o.Observe(PolicyInfo, 1, Other, bound.Sanitize(version))
	}
	observeReadings(o, Other, func(st breaker.State) float64 { return float64(states[st]) }, longest, wait, w, inFlight)
}

func collectOne(o Observer, name string, r depRecord, snap *breaker.Snapshot, now time.Time) {
	var expired int64
	if snap != nil {
		expired = snap.ExpiredProbes
	}
	observeCounts(o, name, r, expired)
	for src, n := range r.bySource {
		o.Observe(ProbeResults, float64(n), name, src[0], src[1])
	}
	// The current stretch: from the event that opened the breaker, or, if that event
	// was missed (the listener was attached late), from the snapshot's last opening.
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
	o.Observe(OpenSeconds, (r.downTotal + stretch).Seconds(), name)
	if snap == nil {
		return // no breaker to read: only what events told us
	}
	o.Observe(PolicyInfo, 1, name, bound.Sanitize(snap.PolicyVersion))
	state := snap.State
	observeReadings(o, name, func(st breaker.State) float64 {
		if st == state {
			return 1
		}
		return 0
	}, stretch, snap.RetryAfter, snap.Window, int64(snap.ProbesInFlight))
}
