package metrics

import (
	"log/slog"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// The defaults of both exporters' caps.
const (
	DefaultMaxLabelValues = 1000
	DefaultMaxSeries      = 10000
)

// Config is what State needs from an exporter's configuration.
type Config struct {
	Logger          *slog.Logger
	Clock           clock.Clock
	MaxLabelValues  int
	MaxSeries       int
	DurationBuckets []float64
}

// WithDefaults fills the zero fields (a discarding logger, the system clock, the
// default caps and buckets) and checks the rest: a bad value is an
// *agentbreaker.ConfigError naming pkg, the field and the value, unwrapping to
// sentinel.
func (c Config) WithDefaults(pkg string, sentinel error, buckets []float64) (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.OrSystem(c.Clock)
	l, err := bound.Limits{MaxLabelValues: c.MaxLabelValues, MaxSeries: c.MaxSeries, DurationBuckets: c.DurationBuckets}.WithDefaults(
		bound.Limits{MaxLabelValues: DefaultMaxLabelValues, MaxSeries: DefaultMaxSeries, DurationBuckets: buckets}, pkg, sentinel)
	c.MaxLabelValues, c.MaxSeries, c.DurationBuckets = l.MaxLabelValues, l.MaxSeries, l.DurationBuckets
	return c, err
}
