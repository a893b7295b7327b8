package sim

import (
	"math"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// BinWidth is the width of the series' time bins.
const BinWidth = 10 * time.Second

type outcome uint8

const (
	outcomeOK       outcome = iota // the turn got its data
	outcomeDegraded                // answered in time, without the data (a payload or an error)
	outcomeFailed                  // the whole-turn deadline passed
)

// Result is a simulation's outcome: one StrategyResult per strategy.
type Result struct {
	Scenario   Scenario         `json:"scenario"`
	Start      time.Time        `json:"start"`
	Strategies []StrategyResult `json:"strategies"`
}

// StrategyResult is one strategy's run.
type StrategyResult struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Breaker     bool        `json:"breaker"`
	Policy      *PolicyInfo `json:"policy,omitempty"`
	Summary     Summary     `json:"summary"`
	// Transitions are the breaker's state changes, in order.
	Transitions []Transition `json:"transitions"`
	// Series holds one value per BinWidth bin from the start.
	Series Series `json:"series"`
	// Minutes is the minute-by-minute timeline.
	Minutes []Minute `json:"minutes"`
}

// PolicyInfo is the policy a strategy's breaker ran, read back from the breaker (every
// default filled in), in the dependency file's keys: paste it under a dependency's
// policy to run the same. Keys that take no effect in it are left out: a count window
// has no window or buckets, a time window no window_calls.
type PolicyInfo struct {
	// Description is the policy in one line, as the timeline prints it.
	Description          string  `json:"description"`
	FailureRateThreshold float64 `json:"failure_rate_threshold"`
	MinimumCalls         int     `json:"minimum_calls"`
	// WindowCalls is the count window's size; Window and Buckets the time window's.
	WindowCalls           int     `json:"window_calls,omitempty"`
	Window                string  `json:"window,omitempty"`
	Buckets               int     `json:"buckets,omitempty"`
	SlowCallThreshold     string  `json:"slow_call_threshold"`
	SlowCallRateThreshold float64 `json:"slow_call_rate_threshold,omitempty"`
	Cooldown              string  `json:"cooldown"`
	CooldownMultiplier    float64 `json:"cooldown_multiplier"`
	MaxCooldown           string  `json:"max_cooldown,omitempty"`
	// Jitter is negative when it is off.
	Jitter         float64 `json:"jitter"`
	HalfOpenProbes int     `json:"half_open_probes"`
	ProbeLease     string  `json:"probe_lease"`
	MaxRetryAfter  string  `json:"max_retry_after"`
	Version        string  `json:"version,omitempty"`
}

func policyInfo(p breaker.Policy) PolicyInfo {
	fp := FilePolicy(p)
	pi := PolicyInfo{Description: DescribePolicy(p), FailureRateThreshold: fp.FailureRateThreshold,
		MinimumCalls: fp.MinimumCalls, Window: fp.Window, Buckets: fp.Buckets,
		SlowCallThreshold: fp.SlowCallThreshold, SlowCallRateThreshold: fp.SlowCallRateThreshold,
		Cooldown: fp.Cooldown, CooldownMultiplier: fp.CooldownMultiplier, MaxCooldown: fp.MaxCooldown,
		Jitter: fp.Jitter, HalfOpenProbes: fp.HalfOpenProbes, ProbeLease: fp.ProbeLease,
		MaxRetryAfter: fp.MaxRetryAfter, Version: fp.Version}
	if fp.WindowCalls > 0 {
		pi.WindowCalls = int(fp.WindowCalls)
	}
	return pi
}

// Summary holds a strategy's headline figures. Times are seconds; a figure that does
// not apply (a breaker that never tripped) is null.
type Summary struct {
	// CallsDuringOutage counts calls that reached the dependency while it was down.
	CallsDuringOutage int `json:"calls_during_outage"`
	// CallsAfterTrip counts those sent after the breaker first tripped in the outage.
	CallsAfterTrip int `json:"calls_during_outage_after_trip"`
	CallsTotal     int `json:"calls_total"`
	FailedCalls    int `json:"failed_calls"`
	// SucceededDuringOutage counts calls that got data while the dependency was down
	// (only a partial outage has any).
	SucceededDuringOutage int `json:"succeeded_during_outage"`
	// Rejected counts calls answered without reaching the dependency (open breaker,
	// full bulkhead, spent retry budget).
	Rejected int `json:"rejected_calls"`
	// BulkheadRejected counts the rejections by a full bulkhead (agentbreaker's busy
	// payload); each counts as a failure for the breaker.
	BulkheadRejected int `json:"bulkhead_rejected"`
	// RetryRefused counts the model's re-issues refused by the retry orchestrator (spent
	// attempts, deadline or retry budget: the budget-exhausted payload).
	RetryRefused int `json:"retry_refused"`
	// TripAfterOnset is how long after the outage began the breaker first opened.
	TripAfterOnset *float64 `json:"trip_after_onset_s"`
	// Trips counts closed→open transitions; FalseTrips those outside the outage.
	Trips      int `json:"trips"`
	FalseTrips int `json:"false_trips"`
	// ProbesDuringOutage counts half-open probes let through while it was down.
	ProbesDuringOutage int `json:"probes_during_outage"`
	Probes             int `json:"probes"`
	// CloseAfterRecovery is how long after the dependency recovered the breaker closed.
	CloseAfterRecovery *float64 `json:"close_after_recovery_s"`
	// Turns by outcome, over the whole run and for turns started during the outage.
	Turns         TurnCounts `json:"turns"`
	OutageTurns   TurnCounts `json:"outage_turns"`
	OutageTurnP50 float64    `json:"outage_turn_latency_p50_s"`
	OutageTurnP95 float64    `json:"outage_turn_latency_p95_s"`
	// WorkerSecondsHung is the time calls spent waiting on a dependency that never
	// answered, until the tool timeout ended them.
	WorkerSecondsHung float64 `json:"worker_seconds_hung"`
	// PeakInFlight is the most calls waiting on the dependency at once.
	PeakInFlight int `json:"peak_in_flight"`
}

// TurnCounts counts turns by outcome.
type TurnCounts struct {
	OK       int `json:"ok"`
	Degraded int `json:"degraded"`
	Failed   int `json:"failed"`
}

// Transition is one breaker state change.
type Transition struct {
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

// Series holds per-bin values.
type Series struct {
	// Calls reaching the dependency per bin, by the instant they were sent, and those of
	// them that failed (however late they ended), so Failures[i] ≤ Calls[i].
	Calls    []int `json:"calls"`
	Failures []int `json:"failures"`
	// Rejected calls per bin.
	Rejected []int `json:"rejected"`
	// TurnLatencyMean and TurnLatencyMax are over turns that ended in the bin, seconds;
	// NaN-free: a bin without turns holds -1.
	TurnLatencyMean []float64 `json:"turn_latency_mean_s"`
	TurnLatencyMax  []float64 `json:"turn_latency_max_s"`
	// State is the breaker state at the end of each bin ("" without a breaker).
	State []string `json:"state"`
}

// Minute is one line of the timeline.
type Minute struct {
	At       time.Time  `json:"at"`
	Calls    int        `json:"calls"`
	Failures int        `json:"failures"`
	Rejected int        `json:"rejected"`
	Turns    TurnCounts `json:"turns"`
	// State is the breaker state at the end of the minute; Changes its transitions.
	State   string   `json:"state"`
	Changes []string `json:"changes,omitempty"`
}

// recorder gathers one run's figures.
type recorder struct {
	s             Scenario
	start         time.Time
	onset, recov  time.Time
	bins          int
	calls, fails  []int
	rejects       []int
	latSum        []float64
	latN          []int
	latMax        []float64
	turnsByMinute []TurnCounts
	trans         []Transition
	sum           Summary
	inFlight      int
	firstTrip     time.Time
	outageLat     []float64
}

func newRecorder(s Scenario, start time.Time) *recorder {
	n := int((s.Duration + BinWidth - 1) / BinWidth)
	mins := int((s.Duration + time.Minute - 1) / time.Minute)
	return &recorder{s: s, start: start, onset: s.onset(start), recov: s.recovery(start), bins: n,
		calls: make([]int, n), fails: make([]int, n), rejects: make([]int, n),
		latSum: make([]float64, n), latN: make([]int, n), latMax: make([]float64, n),
		turnsByMinute: make([]TurnCounts, mins)}
}

func (r *recorder) bin(t time.Time) int {
	return min(max(int(t.Sub(r.start)/BinWidth), 0), r.bins-1)
}

func (r *recorder) inOutage(t time.Time) bool { return !t.Before(r.onset) && t.Before(r.recov) }

func (r *recorder) sent(at time.Time, d time.Duration, hung bool) {
	r.calls[r.bin(at)]++
	r.sum.CallsTotal++
	if r.inOutage(at) {
		r.sum.CallsDuringOutage++
		if !r.firstTrip.IsZero() {
			r.sum.CallsAfterTrip++
		}
	}
	if hung {
		r.sum.WorkerSecondsHung += d.Seconds()
	}
	r.inFlight++
	r.sum.PeakInFlight = max(r.sum.PeakInFlight, r.inFlight)
}

// completed is told a call's outcome; sentAt is when the call was sent.
func (r *recorder) completed(sentAt time.Time, failed bool) {
	r.inFlight--
	if failed {
		r.fails[r.bin(sentAt)]++
		r.sum.FailedCalls++
	} else if r.inOutage(sentAt) {
		r.sum.SucceededDuringOutage++
	}
}

func (r *recorder) rejected(at time.Time) {
	r.rejects[r.bin(at)]++
	r.sum.Rejected++
}

func (r *recorder) turn(start, end time.Time, o outcome) {
	lat := end.Sub(start).Seconds()
	b := r.bin(end)
	r.latSum[b] += lat
	r.latN[b]++
	r.latMax[b] = math.Max(r.latMax[b], lat)
	count := func(c *TurnCounts) {
		switch o {
		case outcomeOK:
			c.OK++
		case outcomeDegraded:
			c.Degraded++
		default:
			c.Failed++
		}
	}
	count(&r.sum.Turns)
	if r.inOutage(start) {
		count(&r.sum.OutageTurns)
		r.outageLat = append(r.outageLat, lat)
	}
	if m := int(end.Sub(r.start) / time.Minute); m >= 0 && m < len(r.turnsByMinute) {
		count(&r.turnsByMinute[m])
	}
}

func (r *recorder) transition(at time.Time, from, to breaker.State, reason string) {
	r.trans = append(r.trans, Transition{At: at, From: from.String(), To: to.String(), Reason: reason})
	switch {
	case to == breaker.Open && from != breaker.HalfOpen && from != breaker.Open:
		r.sum.Trips++
		if r.inOutage(at) {
			if r.firstTrip.IsZero() {
				r.firstTrip = at
				v := ms(at.Sub(r.onset))
				r.sum.TripAfterOnset = &v
			}
		} else {
			r.sum.FalseTrips++
		}
	case to == breaker.HalfOpen:
		r.sum.Probes++
		if r.inOutage(at) {
			r.sum.ProbesDuringOutage++
		}
	case to == breaker.Closed && !at.Before(r.recov) && r.sum.CloseAfterRecovery == nil && !r.firstTrip.IsZero():
		v := ms(at.Sub(r.recov))
		r.sum.CloseAfterRecovery = &v
	}
}

// stateAt returns the breaker state at t from the transitions.
func (r *recorder) stateAt(t time.Time) string {
	s := breaker.Closed.String()
	for _, tr := range r.trans {
		if tr.At.After(t) {
			break
		}
		s = tr.To
	}
	return s
}

func (r *recorder) finish(end time.Time, sr *StrategyResult) {
	if r.sum.CloseAfterRecovery == nil && !r.firstTrip.IsZero() && r.stateAt(r.recov) == breaker.Closed.String() {
		zero := 0.0 // it had closed again before the dependency recovered
		r.sum.CloseAfterRecovery = &zero
	}
	slices.Sort(r.outageLat)
	r.sum.OutageTurnP50, r.sum.OutageTurnP95 = quantile(r.outageLat, 0.5), quantile(r.outageLat, 0.95)
	r.sum.WorkerSecondsHung = math.Round(r.sum.WorkerSecondsHung*1000) / 1000
	sr.Summary = r.sum
	sr.Transitions = r.trans
	if sr.Transitions == nil {
		sr.Transitions = []Transition{}
	}
	ser := Series{Calls: r.calls, Failures: r.fails, Rejected: r.rejects,
		TurnLatencyMean: make([]float64, r.bins), TurnLatencyMax: make([]float64, r.bins), State: make([]string, r.bins)}
	for i := range r.bins {
		if r.latN[i] == 0 {
			ser.TurnLatencyMean[i], ser.TurnLatencyMax[i] = -1, -1
		} else {
			ser.TurnLatencyMean[i] = math.Round(r.latSum[i]/float64(r.latN[i])*1000) / 1000
			ser.TurnLatencyMax[i] = math.Round(r.latMax[i]*1000) / 1000
		}
		if sr.Breaker {
			ser.State[i] = r.stateAt(r.start.Add(time.Duration(i+1) * BinWidth))
		}
	}
	sr.Series = ser
	for m := range r.turnsByMinute {
		from := r.start.Add(time.Duration(m) * time.Minute)
		to := from.Add(time.Minute)
		mi := Minute{At: from, Turns: r.turnsByMinute[m]}
		for b := r.bin(from); b < r.bins && r.start.Add(time.Duration(b)*BinWidth).Before(to); b++ {
			mi.Calls += r.calls[b]
			mi.Failures += r.fails[b]
			mi.Rejected += r.rejects[b]
		}
		if sr.Breaker {
			mi.State = r.stateAt(to.Add(-time.Nanosecond))
			for _, tr := range r.trans {
				if !tr.At.Before(from) && tr.At.Before(to) {
					mi.Changes = append(mi.Changes, tr.At.Format("15:04:05")+" "+tr.To)
				}
			}
		}
		sr.Minutes = append(sr.Minutes, mi)
	}
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return math.Round(sorted[max(i, 0)]*1000) / 1000
}

// Summaries is the JSON summary: the scenario and each strategy's headline figures and
// breaker transitions, without the per-bin series.
func (r *Result) Summaries() any {
	type strat struct {
		Name        string       `json:"name"`
		Description string       `json:"description"`
		Policy      *PolicyInfo  `json:"policy,omitempty"`
		Summary     Summary      `json:"summary"`
		Transitions []Transition `json:"transitions"`
	}
	out := struct {
		Scenario   Scenario  `json:"scenario"`
		Start      time.Time `json:"start"`
		Strategies []strat   `json:"strategies"`
	}{Scenario: r.Scenario, Start: r.Start}
	for _, sr := range r.Strategies {
		out.Strategies = append(out.Strategies, strat{sr.Name, sr.Description, sr.Policy, sr.Summary, sr.Transitions})
	}
	return out
}

// ms is d in seconds, rounded to the millisecond.
func ms(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }
