package telemetry

import (
	"errors"
	"log/slog"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrConfig is the sentinel every configuration error unwraps to.
var ErrConfig = errors.New("telemetry: invalid configuration")

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// DefaultDurationBuckets are the call duration histogram's bucket bounds, in seconds.
// They reach two minutes because model calls can take that long.
var DefaultDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// DefaultMaxLabelValues is the default of Config.MaxLabelValues.
const DefaultMaxLabelValues = metrics.DefaultMaxLabelValues

// Config configures a [Telemetry].
type Config struct {
	// Registerer receives the collectors. Required: the library never registers on the
	// global registry. Use prometheus.WrapRegistererWith to add constant labels.
	Registerer prometheus.Registerer
	// Breakers is read at scrape time for the state of every breaker. Defaults to none;
	// [Telemetry.Watch] adds a source after construction, which is the usual order
	// because the dependency map wants [Telemetry.BreakerEvent] when it is built.
	Breakers BreakerSource
	// Logger receives the structured records. Defaults to a logger that discards them.
	Logger *slog.Logger
	// Clock times the scrape-time durations (how long a breaker has been open, how old
	// the oldest journal intent is). Give it the clock the breakers use. Defaults to the
	// system clock.
	Clock clock.Clock
	// MaxLabelValues caps the distinct values of each label (dependency, tool, model,
	// region, error_class, cause, from, to); later values are reported as "other".
	// The library's own classes are outside the cap: every classify class on
	// error_class and every modelfailover.Cause (and "unknown") on cause always shows
	// as itself, so that an alert or a query on error_class="http_5xx" never reads
	// "other" because a classifier invented names first; the cap holds the names a
	// classifier invents. Those series are charged to MaxSeries like any other.
	// Defaults to DefaultMaxLabelValues.
	MaxLabelValues int
	// MaxSeries caps the total number of series whose labels come from names (breakers,
	// dependencies, tools, models, routes, error classes), over every metric family: a
	// breaker costs 22 series, a call-duration series len(DurationBuckets)+3, the
	// others 1. Once it is spent, new series are reported under a fixed row labelled
	// "other" and counted in agentbreaker_telemetry_series_overflow_total; series
	// admitted earlier keep their labels. The exposition never holds more than
	// Config.SeriesBound() series (DefaultSeriesBound with the defaults). Defaults to
	// DefaultMaxSeries.
	MaxSeries int
	// Fleet, when set, is read at scrape time for fleet mode's sync counters and for
	// whether each watched breaker follows the fleet or decides alone (a *fleet.Fleet;
	// see FleetSource). [Telemetry.WatchFleet] sets it after construction. Defaults to
	// none: no fleet metrics.
	Fleet FleetSource
	// DurationBuckets are the bucket bounds, in seconds, of the call duration histogram:
	// positive and increasing. Defaults to DefaultDurationBuckets.
	DurationBuckets []float64
}

// settings checks c and fills its defaults.
func (c Config) settings() (metrics.Config, error) {
	if c.Registerer == nil {
		return metrics.Config{}, &ConfigError{Package: "telemetry", Field: "Registerer", Value: "nil", Problem: "is required (the global registry is never used implicitly)", Err: ErrConfig}
	}
	return metrics.Config{Logger: c.Logger, Clock: c.Clock, MaxLabelValues: c.MaxLabelValues, MaxSeries: c.MaxSeries,
		DurationBuckets: c.DurationBuckets}.WithDefaults("telemetry", ErrConfig, DefaultDurationBuckets)
}
