package metrics

import "github.com/agentbreaker/agentbreaker/telemetry/internal/bound"

// family identifies a group of series in the series budget; its name, the value of
// the metric label of agentbreaker_telemetry_series_overflow_total, is that of its
// first row.
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
	famShadow
	numFamilies
)

var familyRows = [numFamilies]ID{
	famBreaker: BreakerState, famTransition: Transitions, famCalls: Calls, famDurations: CallDuration,
	famShortCircuits: ShortCircuits, famBulkhead: Bulkhead, famBudget: RetryBudget, famFailovers: Failovers,
	famRouteServing: RouteServing, famAbandoned: Abandoned, famAbandonedTotal: AbandonedTotal,
	famThrottle: ThrottleShare, famLimit: AdaptiveLimit, famShadow: ShadowRefusals,
}

func familyNames() []string {
	names := make([]string, numFamilies)
	for f, id := range familyRows {
		names[f] = Rows[id].Prom
	}
	return names
}

const (
	// breakerSeries is how many series one breaker exports: 5 state, 8 single gauges
	// and counters (open duration, open seconds, retry-after, three window counts,
	// probes in flight, cooldown extensions), the 5 automatic transitions, 3 probe
	// results and its policy version. Transitions it does not make by itself cost one
	// more each.
	breakerSeries = 5 + 8 + 5 + 3 + 1
	// maxOtherTransitions bounds the transitions of the "other" breaker row beyond
	// the automatic ones: every (from, to, cause) of 5 states and 7 causes.
	maxOtherTransitions = 5*5*7 - 5
	// throttleSeries: the share and the shed count of each of the four priorities.
	throttleSeries = 1 + 4
	// limitSeries: the limit, its floor, the no-load latency and the refusals of
	// each of the four priorities.
	limitSeries = 3 + 4
	// FleetErrorClasses bounds the rows of agentbreaker_fleet_sync_errors_total.
	FleetErrorClasses = 4
	// FleetSeries is what a watched fleet adds to the bound: its four counters, the
	// "other" row of agentbreaker_fleet_local and the sync error rows.
	FleetSeries = 4 + 1 + FleetErrorClasses
	// outcomes: SUCCEEDED, FAILED_BEFORE_SEND, FAILED, UNKNOWN.
	outcomes = 4
	// FixedSeries are the series a scrape may hold beyond the budget and the "other"
	// rows of the call-duration histogram (outcomes of them, each len(buckets)+3
	// series): the "other" breaker row (no open_seconds_total) with every transition
	// it could hold, calls per outcome, short circuits per state, bulkhead, retry
	// budget, failovers, route serving, the abandoned gauge and counter, the throttle
	// and adaptive-limit rows, the shadow refusals per control; then the overflow
	// counter (one series per family), the journal gauges, the fallback ratio and the
	// start time.
	FixedSeries = breakerSeries - 1 + maxOtherTransitions + outcomes + 5 + 4 + 2 + throttleSeries + limitSeries +
		len(shadowControls) + int(numFamilies) + 2 + 1 + 1
)

// SeriesBound is the most series an exporter exports whatever names it is fed; zero
// values mean DefaultMaxSeries and defaultBuckets.
func SeriesBound(maxSeries int, buckets, defaultBuckets []float64, fleet bool) int {
	if maxSeries == 0 {
		maxSeries = DefaultMaxSeries
	}
	if buckets == nil {
		buckets = defaultBuckets
	}
	n := maxSeries + FixedSeries + outcomes*(len(buckets)+3)
	if fleet {
		n += FleetSeries
	}
	return n
}

// admit asks the series budget for the series of family f with these labels; a
// refusal is counted in agentbreaker_telemetry_series_overflow_total.
func (s *State) admit(f family, cost int, labels ...string) bool {
	k := bound.Key{Fam: uint8(f)}
	copy(k.Labels[:], labels)
	return s.budget.Admit(k, cost)
}

// tryAdmit is admit without counting a refusal: collections fold the same things
// again every time.
func (s *State) tryAdmit(f family, cost int, labels ...string) bool {
	k := bound.Key{Fam: uint8(f)}
	copy(k.Labels[:], labels)
	return s.budget.TryAdmit(k, cost)
}

// admitOne is admit for a family with a single name label: it returns the label, or
// "other" when the budget refuses the series.
func (s *State) admitOne(f family, label string) string {
	if !s.admit(f, 1, label) {
		return Other
	}
	return label
}
