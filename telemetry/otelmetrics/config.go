package otelmetrics

import (
	"errors"
	"iter"
	"log/slog"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// ErrConfig is the sentinel every configuration error unwraps to.
var ErrConfig = errors.New("otelmetrics: invalid configuration")

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// BreakerSource lists breakers whose state is read at collection time and looks one up
// by name. *dependencymap.Map implements it. It has the method set of
// telemetry.BreakerSource, declared here so that this package does not import the
// Prometheus client. Implementations must be safe for concurrent use.
type BreakerSource interface {
	// Breakers returns every breaker, sorted by name.
	Breakers() []*breaker.Breaker
	// Get returns the breaker of a dependency key or model key.
	Get(key string) (*breaker.Breaker, bool)
}

// ThrottleSource lists the throttles whose state is read at collection time.
// *dependencymap.Map implements it.
type ThrottleSource interface {
	// Throttles returns every throttle, sorted by name.
	Throttles() []*throttle.Throttle
}

// LimitSource lists the adaptive concurrency limits whose state is read at collection
// time. *dependencymap.Map implements it. It has the method set of
// telemetry.LimitSource, so one value feeds both paths. Implementations must be safe
// for concurrent use.
type LimitSource interface {
	// Limiters returns every adaptive limit, sorted by name.
	Limiters() []*adaptivelimit.Limiter
}

// FleetSource is what fleet mode (package fleet) shows at collection time; *fleet.Fleet
// implements it. It must not block on the network.
type FleetSource interface {
	// Scope returns "fleet" while the named breaker follows the fleet, "local" while it
	// decides alone and "" when no breaker of that name is attached.
	Scope(dependency string) string
	// Counters returns the fleet's counters since it started.
	Counters() (syncs, failures, outages, commands int64)
}

// FleetErrorSource is implemented by a FleetSource that classifies its failed syncs
// (*fleet.Fleet does); at most FleetErrorClasses classes are exported.
type FleetErrorSource interface {
	SyncErrors() iter.Seq2[string, int64]
}

// FleetErrorClasses bounds the rows of agentbreaker.fleet.sync_errors.
const FleetErrorClasses = metrics.FleetErrorClasses

// DefaultDurationBuckets are the call duration histogram's bucket bounds, in seconds:
// those of the Prometheus telemetry, so that histogram_quantile reads the same.
var DefaultDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// DefaultMaxLabelValues is the default of Config.MaxLabelValues, as in package telemetry.
const DefaultMaxLabelValues = 1000

// DefaultMaxSeries is the default of Config.MaxSeries, as in package telemetry.
const DefaultMaxSeries = 10000

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
	// MaxLabelValues caps the distinct values of each attribute that comes from a name
	// (dependency, tool, model, region, error_class, cause, from/to); later values are
	// reported as "other". Defaults to DefaultMaxLabelValues.
	MaxLabelValues int
	// MaxSeries caps the series whose attributes come from names, over every
	// instrument together, with the costs of telemetry.Config.MaxSeries (a breaker
	// 21, a call-duration series len(DurationBuckets)+3, others 1). Past it, new
	// series are reported under "other" and counted in
	// agentbreaker.telemetry.series_overflow. Defaults to DefaultMaxSeries.
	MaxSeries int
	// DurationBuckets are the explicit bucket bounds, in seconds, of
	// agentbreaker.call.duration: positive and increasing. Defaults to
	// DefaultDurationBuckets.
	DurationBuckets []float64
}

func (c Config) withDefaults() (Config, error) {
	if c.MeterProvider == nil {
		return c, &ConfigError{Package: "otelmetrics", Field: "MeterProvider", Value: "nil", Problem: "is required (the global provider is never used implicitly)", Err: ErrConfig}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.OrSystem(c.Clock)
	l, err := bound.Limits{MaxLabelValues: c.MaxLabelValues, MaxSeries: c.MaxSeries, DurationBuckets: c.DurationBuckets}.WithDefaults(
		bound.Limits{MaxLabelValues: DefaultMaxLabelValues, MaxSeries: DefaultMaxSeries, DurationBuckets: DefaultDurationBuckets}, "otelmetrics", ErrConfig)
	if err != nil {
		return c, err
	}
	c.MaxLabelValues, c.MaxSeries, c.DurationBuckets = l.MaxLabelValues, l.MaxSeries, l.DurationBuckets
	return c, nil
}
