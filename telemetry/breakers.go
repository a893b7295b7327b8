package telemetry

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// transition is one (from, to, cause) combination of agentbreaker_breaker_transitions_total.
type transition struct {
	from, to breaker.State
	cause    breaker.Cause
}

// automatic are the transitions a breaker makes by itself. They are exported at zero
// from the first scrape, so that rate() and increase() see their first increment: a
// series born at 1 has no earlier sample to differ from.
var automatic = []transition{
	{breaker.Closed, breaker.Open, breaker.CauseFailureRate},
	{breaker.Closed, breaker.Open, breaker.CauseSlowCallRate},
	{breaker.Open, breaker.HalfOpen, breaker.CauseCooldownElapsed},
	{breaker.HalfOpen, breaker.Closed, breaker.CauseProbeSucceeded},
	{breaker.HalfOpen, breaker.Open, breaker.CauseProbeFailed},
}

// allStates are the values of the state label, in a fixed order.
var allStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen, breaker.ForcedClosed}

// depRecord is what events taught us about one breaker. Guarded by Telemetry.mu.
type depRecord struct {
	transitions    map[transition]uint64
	probeSucceeded uint64
	probeFailed    uint64
	// bySource counts the settled probes by [source, result], for the breakers whose
	// series the budget admitted (agentbreaker_breaker_probe_results_total).
	bySource   map[[2]string]uint64
	extensions uint64
	// downSince is when the current open (or half-open) stretch began; zero outside one.
	downSince time.Time
	// downTotal sums the stretches that ended.
	downTotal time.Duration
	// last is the latest state change, put on the span of the call that made it
	// (TransitionDuring).
	last breaker.Event
}

func (r *depRecord) clone() depRecord {
	c := *r
	c.transitions = maps.Clone(r.transitions)
	c.bySource = maps.Clone(r.bySource)
	return c
}

// down reports whether a state counts as "open" for the time-open metrics: the breaker
// opened by itself and has not closed since. Forced open is an operator's choice and
// does not count.
func down(s breaker.State) bool { return s == breaker.Open || s == breaker.HalfOpen }

// record counts the event in its breaker's record, or in the "other" record when the
// series budget has no room for the breaker. A transition the breaker does not make by
// itself (an operator's, say) costs one more series the first time; past the budget it
// is counted under "other", while the breaker's own time-open accounting goes on.
func (t *Telemetry) record(e breaker.Event) {
	// The dependency label's cap (Config.MaxLabelValues) holds here as on every other
	// family: a breaker past it is counted under "other".
	name := t.dependency.value(e.Breaker)
	tr := transition{e.From, e.To, e.Cause}
	own := name != otherLabel && t.admit(famBreaker, breakerSeries, name)
	countHere := own
	if own && e.From != e.To && !slices.Contains(automatic, tr) {
		countHere = t.admit(famTransition, 1, name, e.From.String(), e.To.String(), e.Cause.String())
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
		if !t.admit(famTransition, 1, name, nameProbeResults, source[0], source[1]) {
			source = [2]string{}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !countHere {
		t.other.count(e, tr)
	}
	if !own {
		return
	}
	r := t.deps[name]
	if r == nil {
		r = &depRecord{transitions: make(map[transition]uint64)}
		t.deps[name] = r
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

// BreakerEvent records a breaker state change and logs it. Pass it to
// dependencymap.Config.OnStateChange (or breaker.Config.OnStateChange).
func (t *Telemetry) BreakerEvent(e breaker.Event) {
	if t == nil {
		return
	}
	t.record(e)

	level := slog.LevelInfo
	if e.To == breaker.Open || e.To == breaker.ForcedOpen || e.Cause == breaker.CauseOperator {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if !t.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String(KeyDependency, e.Breaker),
		slog.String(KeyFrom, e.From.String()),
		slog.String(KeyTo, e.To.String()),
		slog.String(KeyCause, e.Cause.String()),
		slog.String(KeyReason, e.Reason),
		slog.String(KeyBreakerState, e.To.String()),
		slog.String(KeyPolicyVersion, e.PolicyVersion),
		slog.Uint64(KeyGeneration, e.Generation),
		slog.Int64(KeyWindowCalls, e.Window.Calls),
		slog.Int64(KeyWindowFailedCalls, e.Window.Failures),
	}
	if !e.ReopenAt.IsZero() {
		attrs = append(attrs, slog.Time(KeyReopenAt, e.ReopenAt))
	}
	if e.HealthProbe {
		attrs = append(attrs, slog.Bool(KeyHealthProbe, true))
	}
	msg := "agentbreaker: breaker state changed"
	if e.From == e.To {
		msg = "agentbreaker: breaker reopen time moved later"
	}
	t.log.LogAttrs(ctx, level, msg, attrs...)
}

// collectBreakers reads every watched breaker and the event counts. A breaker the
// series budget has no room for, or whose sanitised name another breaker already
// shows (or is "other"), is folded into the dependency="other" row.
func (t *Telemetry) collectBreakers(ch chan<- prometheus.Metric) {
	now := t.clk.Now()
	byLabel := make(map[string]*breaker.Breaker)
	rawSeen := make(map[string]bool)
	var folded []*breaker.Breaker
	for _, src := range t.sourceList() {
		for _, b := range src.Breakers() {
			raw := b.Name()
			if rawSeen[raw] {
				continue // an earlier source listed it
			}
			rawSeen[raw] = true
			label := t.dependency.value(raw) // "other" past Config.MaxLabelValues
			if _, dup := byLabel[label]; dup || label == otherLabel ||
				!t.budget.tryAdmit(seriesKey{fam: famBreaker, labels: [4]string{label}}, breakerSeries) {
				folded = append(folded, b)
				continue
			}
			byLabel[label] = b
		}
	}
	records := make(map[string]depRecord)
	t.mu.Lock()
	for name, r := range t.deps {
		records[name] = r.clone()
	}
	other := t.other.clone()
	t.mu.Unlock()

	names := slices.Sorted(maps.Keys(byLabel))
	for name := range records {
		if _, ok := byLabel[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		r := records[name]
		var snap *breaker.Snapshot
		if b := byLabel[name]; b != nil {
			s := b.Snapshot()
			snap = &s
		}
		t.collectOne(ch, name, r, snap, now)
	}
	if len(folded) > 0 || len(other.transitions) > 0 || other.extensions > 0 {
		collectOther(ch, other, folded, now)
	}
	t.collectFleet(ch, byLabel, folded)
}

// collectOther exports the dependency="other" row: the event counts of the breakers
// the budget folded, summed, and for the folded breakers read now, the number in each
// state, the sums of their window counts and probes, the longest time open and the
// longest wait for a probe. It has no open_seconds_total: a sum over breakers that
// come and go would not be a counter.
func collectOther(ch chan<- prometheus.Metric, r depRecord, folded []*breaker.Breaker, now time.Time) {
	emit := func(d *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, typ, v, append([]string{otherLabel}, labels...)...)
	}
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
	seen := make(map[transition]bool, len(automatic))
	for _, tr := range automatic {
		seen[tr] = true
		emit(descTransitions, prometheus.CounterValue, float64(r.transitions[tr]), tr.from.String(), tr.to.String(), tr.cause.String())
	}
	for tr, n := range r.transitions {
		if !seen[tr] {
			emit(descTransitions, prometheus.CounterValue, float64(n), tr.from.String(), tr.to.String(), tr.cause.String())
		}
	}
	emit(descCooldownExtensions, prometheus.CounterValue, float64(r.extensions))
	emit(descProbes, prometheus.CounterValue, float64(r.probeSucceeded), ProbeSucceeded)
	emit(descProbes, prometheus.CounterValue, float64(r.probeFailed), ProbeFailed)
	emit(descProbes, prometheus.CounterValue, float64(expired), ProbeExpired)
	for _, st := range allStates {
		emit(descState, prometheus.GaugeValue, float64(states[st]), st.String())
	}
	emit(descOpenDuration, prometheus.GaugeValue, longest.Seconds())
	emit(descRetryAfter, prometheus.GaugeValue, wait.Seconds())
	emit(descWindowCalls, prometheus.GaugeValue, float64(calls))
	emit(descWindowFailed, prometheus.GaugeValue, float64(failed))
	emit(descWindowSlow, prometheus.GaugeValue, float64(slow))
	emit(descProbesInFlight, prometheus.GaugeValue, float64(inFlight))
}

func (t *Telemetry) collectOne(ch chan<- prometheus.Metric, name string, r depRecord, snap *breaker.Snapshot, now time.Time) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{name}, labels...)...)
	}

	seen := make(map[transition]bool, len(automatic))
	for _, tr := range automatic {
		seen[tr] = true
		counter(descTransitions, float64(r.transitions[tr]), tr.from.String(), tr.to.String(), tr.cause.String())
	}
	for tr, n := range r.transitions {
		if !seen[tr] {
			counter(descTransitions, float64(n), tr.from.String(), tr.to.String(), tr.cause.String())
		}
	}
	counter(descCooldownExtensions, float64(r.extensions))
	var expired int64
	if snap != nil {
		expired = snap.ExpiredProbes
	}
	counter(descProbes, float64(r.probeSucceeded), ProbeSucceeded)
	counter(descProbes, float64(r.probeFailed), ProbeFailed)
	counter(descProbes, float64(expired), ProbeExpired)
	for src, n := range r.bySource {
		counter(descProbeResults, float64(n), src[0], src[1])
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
	counter(descOpenSeconds, (r.downTotal + stretch).Seconds())
	if snap == nil {
		return // no breaker to read: only what events told us
	}
	gauge(descOpenDuration, stretch.Seconds())
	for _, s := range allStates {
		v := 0.0
		if s == snap.State {
			v = 1
		}
		gauge(descState, v, s.String())
	}
	gauge(descRetryAfter, snap.RetryAfter.Seconds())
	gauge(descWindowCalls, float64(snap.Window.Calls))
	gauge(descWindowFailed, float64(snap.Window.Failures))
	gauge(descWindowSlow, float64(snap.Window.SlowCalls))
	gauge(descProbesInFlight, float64(snap.ProbesInFlight))
}

// collectGauges exports the values other packages push, once they have pushed one:
// a gauge reading 0 before the journal or the failover wrapper ever reported would
// claim a health nobody measured.
func (t *Telemetry) collectGauges(ch chan<- prometheus.Metric) {
	now := t.clk.Now()
	t.mu.Lock()
	journalSet, n, oldest := t.journalSet, t.journalN, t.journalOldest
	fallbackSet, fallback := t.fallbackSet, t.fallback
	t.mu.Unlock()
	if journalSet {
		ch <- prometheus.MustNewConstMetric(descJournalPending, prometheus.GaugeValue, float64(n))
		age := 0.0
		if n > 0 && !oldest.IsZero() {
			age = max(0, now.Sub(oldest).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(descJournalOldestAge, prometheus.GaugeValue, age)
	}
	if fallbackSet {
		ch <- prometheus.MustNewConstMetric(descFallbackRatio, prometheus.GaugeValue, fallback)
	}
	ch <- prometheus.MustNewConstMetric(descStartTime, prometheus.GaugeValue, float64(t.started.UnixNano())/1e9)
}
