package telemetry

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// DefaultMaxSeries is the default of Config.MaxSeries.
const DefaultMaxSeries = 10000

// MaxLabelLength caps a label value, in bytes. A longer name (a model can invent one of
// any length) is cut at a character boundary and ends in "…", so one call cannot make
// every scrape large.
const MaxLabelLength = bound.MaxLabelLength

// family identifies a metric family in the series budget.
type family uint8

const (
	famBreaker    family = iota // every series of one breaker, read at scrape time
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
	famThrottle // every series of one throttle, read at scrape time
	famLimit    // every series of one adaptive limit, read at scrape time
	numFamilies
)

// familyNames are the values of the metric label of agentbreaker_telemetry_series_overflow_total.
var familyNames = [numFamilies]string{
	famBreaker:        nameBreakerState, // a breaker's series are folded together
	famTransition:     nameTransitions,
	famCalls:          nameCalls,
	famDurations:      nameCallDuration,
	famShortCircuits:  nameShortCircuits,
	famBulkhead:       nameBulkheadRejections,
	famBudget:         nameRetryBudgetExhausted,
	famFailovers:      nameModelFailovers,
	famRouteServing:   nameRouteServing,
	famAbandoned:      nameAbandoned,
	famAbandonedTotal: nameAbandonedTotal,
	famThrottle:       nameThrottleShare, // a throttle's series are folded together
	famLimit:          nameLimit,         // an adaptive limit's series are folded together
}

// breakerSeries is how many series one breaker exports: 5 state, 8 single gauges and
// counters (open duration, open seconds, retry-after, three window counts, probes in
// flight, cooldown extensions), the 5 automatic transitions and 3 probe results.
// Transitions it does not make by itself cost one more each, when they first happen.
const breakerSeries = 5 + 8 + 5 + 3

// maxOtherTransitions bounds the transitions of the "other" breaker row beyond the
// automatic ones: every (from, to, cause) of 5 states and 7 causes.
const maxOtherTransitions = 5*5*7 - 5

// seriesKey identifies one admitted series (or one breaker) without allocating.
type seriesKey struct {
	fam    family
	labels [4]string
}

// seriesBudget admits new series until their total reaches max (bound.Budget, which
// the OpenTelemetry adapter shares); after that, callers report under the family's
// "other" series and the refusal is counted in
// agentbreaker_telemetry_series_overflow_total. It is safe for concurrent use.
type seriesBudget struct {
	core     *bound.Budget
	overflow *prometheus.CounterVec
	folded   [numFamilies]prometheus.Counter
}

func newSeriesBudget(max int, log *slog.Logger) *seriesBudget {
	b := &seriesBudget{core: bound.NewBudget(max, familyNames[:], log)}
	b.overflow = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameSeriesOverflow,
		Help: "Reports folded into a series labelled \"other\" because the telemetry's series budget (Config.MaxSeries) was spent, by metric family.",
	}, []string{"metric"})
	for f := range numFamilies {
		b.folded[f] = b.overflow.WithLabelValues(familyNames[f])
	}
	return b
}

func (k seriesKey) key() bound.Key { return bound.Key{Fam: uint8(k.fam), Labels: k.labels} }

// admit reports whether the series k may be exported under its own labels, charging
// cost series to the budget the first time. A refusal is counted and, once, logged.
func (b *seriesBudget) admit(k seriesKey, cost int) bool {
	if b.core.Admit(k.key(), cost) {
		return true
	}
	b.folded[k.fam].Inc()
	return false
}

// tryAdmit is admit without counting or logging a refusal: scrapes use it, since
// they fold the same breakers again every time.
func (b *seriesBudget) tryAdmit(k seriesKey, cost int) bool { return b.core.TryAdmit(k.key(), cost) }

// known reports whether k was admitted, without charging anything.
func (b *seriesBudget) known(k seriesKey) bool { return b.core.Known(k.key()) }

// SeriesBound is the most series a Telemetry with this configuration exports, whatever
// names it is fed: the budget (MaxSeries) plus the fixed "other" rows and the series
// that do not depend on names. With the defaults it is DefaultSeriesBound. A fleet
// (Config.Fleet, or one given to Telemetry.WatchFleet later) adds FleetSeries.
func (c Config) SeriesBound() int {
	if c.MaxSeries == 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.DurationBuckets == nil {
		c.DurationBuckets = DefaultDurationBuckets
	}
	// A call-duration series: its buckets, +Inf, _sum and _count.
	hist := len(c.DurationBuckets) + 3
	// SUCCEEDED, FAILED_BEFORE_SEND, FAILED, UNKNOWN.
	const outcomes = 4
	// The "other" rows: the breaker row (no open_seconds_total) with every transition
	// it could hold, calls and call durations per outcome, short circuits per state,
	// then bulkhead, retry budget, failovers, route serving, the abandoned gauge and
	// counter, the throttle row and the adaptive-limit row.
	otherRows := breakerSeries - 1 + maxOtherTransitions +
		outcomes + outcomes*hist + 5 +
		4 + 2 + throttleSeries + limitSeries
	// The overflow counter (one series per family), the journal gauges, the fallback
	// ratio and the start time.
	const fixed = int(numFamilies) + 2 + 1 + 1
	bound := c.MaxSeries + otherRows + fixed
	if c.Fleet != nil {
		bound += FleetSeries
	}
	return bound
}

// DefaultSeriesBound is Config{}.SeriesBound(): the worst case with the default
// MaxSeries and DurationBuckets.
const DefaultSeriesBound = DefaultMaxSeries + (breakerSeries - 1 + maxOtherTransitions) + 4 + 4*17 + 5 + 4 + 2 + throttleSeries + limitSeries + int(numFamilies) + 4

// sanitizeLabel makes v safe as a label value (bound.Sanitize): invalid UTF-8 and the
// characters a dependency key may not hold (controls, bidirectional overrides, ...)
// become U+FFFD (the Prometheus client refuses invalid UTF-8, and a scrape that panics
// or fails answers 500), and a value longer than MaxLabelLength is cut.
func sanitizeLabel(v string) string { return bound.Sanitize(v) }
