package otelmetrics

import (
	"log/slog"

	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
)

// ErrConfig is the sentinel every configuration error unwraps to.
var ErrConfig = errors.New("otelmetrics: invalid configuration")

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// The sources read at collection time are those of package telemetry, declared in a
// package that does not import the Prometheus client, so one value feeds both paths.
// A BreakerSource lists breakers (Breakers) and looks one up by dependency or model
// key (Get); a ThrottleSource lists throttles (Throttles); a LimitSource lists
// adaptive concurrency limits (Limiters): *dependencymap.Map is all three. Each must
// be safe for concurrent use.
type (
	BreakerSource  = metrics.BreakerSource
	ThrottleSource = metrics.ThrottleSource
	LimitSource    = metrics.LimitSource
)

// A FleetSource is fleet mode's view, each breaker's Scope ("fleet", "local", or ""
// when not attached) and the fleet's Counters; a FleetErrorSource also classifies its
// failed syncs (SyncErrors, at most FleetErrorClasses classes exported).
// *fleet.Fleet is both. Neither may block on the network.
type (
	FleetSource      = metrics.FleetSource
	FleetErrorSource = metrics.FleetErrorSource
)

// FleetErrorClasses bounds the rows of agentbreaker.fleet.sync_errors.
const FleetErrorClasses = metrics.FleetErrorClasses

// DefaultDurationBuckets are the call duration histogram's bucket bounds, in seconds:
// those of the Prometheus telemetry, so that histogram_quantile reads the same.
var DefaultDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// DefaultMaxLabelValues is the default of Config.MaxLabelValues, as in package telemetry.
const DefaultMaxLabelValues = metrics.DefaultMaxLabelValues

// DefaultMaxSeries is the default of Config.MaxSeries, as in package telemetry.
const DefaultMaxSeries = metrics.DefaultMaxSeries

// Config configures [Metrics]. Its caps have the meaning and the defaults of
// telemetry.Config's, so a process exports the same series through either path.
type Config struct {
	// MeterProvider creates the meter "github.com/agentbreaker/agentbreaker" on which
	// the instruments are made. Required: the global provider is never used
	// implicitly (pass otel.GetMeterProvider() to use it).
	MeterProvider metric.MeterProvider
	// Breakers is read at collection time for the state of every breaker. Defaults to
	// none; [Metrics.Watch] adds a source after construction, the usual order because
	// the dependency map wants [Metrics.BreakerEvent] when it is built.
	Breakers BreakerSource
	// Throttles is read at collection time for every throttle's shed share and shed
	// counts. Defaults to none; [Metrics.WatchThrottles] adds one later.
	Throttles ThrottleSource
	// Limits is read at collection time for every adaptive concurrency limit's value,
	// floor, no-load latency and refusals. Defaults to none; [Metrics.WatchLimits]
	// adds one later.
	Limits LimitSource
	// Fleet, when set, is read at collection time for fleet mode's counters and each
	// watched breaker's scope. [Metrics.WatchFleet] sets it later. Defaults to none.
	Fleet FleetSource
	// Logger receives the warnings about folded labels and a spent series budget.
	// Defaults to discarding them. The call records themselves are written by the
	// callbacks' own Logger (and by package telemetry, when it is used too).
	Logger *slog.Logger
	// Clock times the collection-time durations (how long a breaker has been open, the
	// oldest journal intent's age) and the start time. Give it the breakers' clock.
	// Defaults to the system clock.
	Clock clock.Clock
	// MaxLabelValues, MaxSeries and DurationBuckets are telemetry.Config's caps and
	// buckets, with the same meaning and costs, so both paths fold the same series
	// into "other" (counted in agentbreaker.telemetry.series_overflow). As in package
	// telemetry, the library's own classes (every classify class on error_class,
	// every modelfailover.Cause and "unknown" on cause) are outside MaxLabelValues and
	// charged to MaxSeries. They default to DefaultMaxLabelValues, DefaultMaxSeries and
	// DefaultDurationBuckets.
	MaxLabelValues  int
	MaxSeries       int
	DurationBuckets []float64
}

// settings checks c and fills its defaults.
func (c Config) settings() (metrics.Config, error) {
	if c.MeterProvider == nil {
		return metrics.Config{}, &ConfigError{Package: "otelmetrics", Field: "MeterProvider", Value: "nil", Problem: "is required (the global provider is never used implicitly)", Err: ErrConfig}
	}
	mc := metrics.Config{Logger: c.Logger, Clock: c.Clock, MaxLabelValues: c.MaxLabelValues, MaxSeries: c.MaxSeries}
	mc.DurationBuckets = c.DurationBuckets
	return mc.WithDefaults("otelmetrics", ErrConfig, DefaultDurationBuckets)
}
