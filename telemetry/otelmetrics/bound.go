package otelmetrics

// maxOtherTransitions bounds the transitions of the "other" breaker row beyond the
// automatic ones: every (from, to, cause) of 5 states and 7 causes.
const maxOtherTransitions = 5*5*7 - 5

// FleetSeries is how many series a watched fleet adds to Config.SeriesBound beyond the
// budget: its four counters, the dependency="other" row of agentbreaker.fleet.local
// and the FleetErrorClasses rows of agentbreaker.fleet.sync_errors.
const FleetSeries = 4 + 1 + FleetErrorClasses

// SeriesBound is the most series a Metrics with this configuration exports, counted
// as Prometheus counts them after the exporter (a histogram data point is
// len(DurationBuckets)+3 series), whatever names it is fed: the budget plus the fixed
// "other" rows and the series that do not depend on names. It is
// telemetry.Config.SeriesBound for the same caps. A fleet (Config.Fleet or
// WatchFleet) adds FleetSeries.
func (c Config) SeriesBound() int {
	if c.MaxSeries == 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.DurationBuckets == nil {
		c.DurationBuckets = DefaultDurationBuckets
	}
	hist := len(c.DurationBuckets) + 3
	const outcomes = 4
	otherRows := breakerSeries - 1 + maxOtherTransitions +
		outcomes + outcomes*hist + 5 +
		4 + 2 + throttleSeries + limitSeries
	const fixed = int(numFamilies) + 2 + 1 + 1
	bound := c.MaxSeries + otherRows + fixed
	if c.Fleet != nil {
		bound += FleetSeries
	}
	return bound
}
