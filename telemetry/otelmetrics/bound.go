package otelmetrics

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// FleetSeries is how many series a watched fleet adds to Config.SeriesBound beyond the
// budget: its four counters, the dependency="other" row of agentbreaker.fleet.local
// and the FleetErrorClasses rows of agentbreaker.fleet.sync_errors.
const FleetSeries = metrics.FleetSeries

// SeriesBound is the most series a Metrics with this configuration exports, counted
// as Prometheus counts them after the exporter (a histogram data point is
// len(DurationBuckets)+3 series), whatever names it is fed: the budget plus the fixed
// "other" rows and the series that do not depend on names. It is
// telemetry.Config.SeriesBound for the same caps. A fleet (Config.Fleet or
// WatchFleet) adds FleetSeries.
func (c Config) SeriesBound() int {
	return metrics.SeriesBound(c.MaxSeries, c.DurationBuckets, DefaultDurationBuckets, c.Fleet != nil)
}
