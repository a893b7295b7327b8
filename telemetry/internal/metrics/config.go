package metrics

import (
	"fmt"
	"log/slog"
	"math"
	"slices"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
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
// default caps, buckets) and checks the rest: a bad value is an
// *agentbreaker.ConfigError naming pkg, the field and the value, unwrapping to
// sentinel. The buckets returned are a copy, so a caller changing its slice later
// changes nothing.
func (c Config) WithDefaults(pkg string, sentinel error, buckets []float64) (Config, error) {
	bad := func(field string, v any, problem string) (Config, error) {
		return c, &agentbreaker.ConfigError{Package: pkg, Field: field, Value: v, Problem: problem, Err: sentinel}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.OrSystem(c.Clock)
	switch {
	case c.MaxLabelValues == 0:
		c.MaxLabelValues = DefaultMaxLabelValues
	case c.MaxLabelValues < 0:
		return bad("MaxLabelValues", c.MaxLabelValues, "must be positive")
	}
	switch {
	case c.MaxSeries == 0:
		c.MaxSeries = DefaultMaxSeries
	case c.MaxSeries < 0:
		return bad("MaxSeries", c.MaxSeries, "must be positive")
	}
	if c.DurationBuckets == nil {
		c.DurationBuckets = buckets
	}
	if len(c.DurationBuckets) == 0 {
		return bad("DurationBuckets", c.DurationBuckets, "must hold at least one bound")
	}
	for i, b := range c.DurationBuckets {
		if !(b > 0) || math.IsInf(b, 0) || (i > 0 && b <= c.DurationBuckets[i-1]) {
			return bad(fmt.Sprintf("DurationBuckets[%d]", i), b, "must be positive, finite and larger than the bound before it")
		}
	}
	c.DurationBuckets = slices.Clone(c.DurationBuckets)
	return c, nil
}
