package telemetry

import (
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
)

// DefaultMaxSeries is the default of Config.MaxSeries.
const DefaultMaxSeries = metrics.DefaultMaxSeries

// MaxLabelLength caps a label value, in bytes. A longer name (a model can invent one of
// any length) is cut at a character boundary and ends in "…", so one call cannot make
// every scrape large.
const MaxLabelLength = bound.MaxLabelLength

// SeriesBound is the most series a Telemetry with this configuration exports, whatever
// names it is fed: the budget (MaxSeries) plus the fixed "other" rows and the series
// that do not depend on names. With the defaults it is DefaultSeriesBound. A fleet
// (Config.Fleet, or one given to Telemetry.WatchFleet later) adds FleetSeries.
func (c Config) SeriesBound() int {
	return metrics.SeriesBound(c.MaxSeries, c.DurationBuckets, DefaultDurationBuckets, c.Fleet != nil)
}

// DefaultSeriesBound is Config{}.SeriesBound(): the worst case with the default
// MaxSeries and DurationBuckets (each call-duration series is 14 buckets, +Inf, _sum
// and _count).
const DefaultSeriesBound = DefaultMaxSeries + metrics.FixedSeries + 4*17
