package bound

import (
	"fmt"
	"math"
	"slices"

	"github.com/agentbreaker/agentbreaker"
)

// Limits are the bounds both metrics paths (telemetry and otelmetrics) take from their
// Config: the cap on each name label's values, the series budget and the call-duration
// buckets. Zero values mean the defaults given to [Limits.WithDefaults].
type Limits struct {
	MaxLabelValues  int
	MaxSeries       int
	DurationBuckets []float64
}

// WithDefaults fills zero values from def and checks the rest. A bad value is an
// *agentbreaker.ConfigError naming pkg, the field and the value, unwrapping to sentinel.
// The buckets returned are a copy, so a caller changing its slice later changes nothing.
func (l Limits) WithDefaults(def Limits, pkg string, sentinel error) (Limits, error) {
	bad := func(field string, v any, problem string) (Limits, error) {
		return l, &agentbreaker.ConfigError{Package: pkg, Field: field, Value: v, Problem: problem, Err: sentinel}
	}
	switch {
	case l.MaxLabelValues == 0:
		l.MaxLabelValues = def.MaxLabelValues
	case l.MaxLabelValues < 0:
		return bad("MaxLabelValues", l.MaxLabelValues, "must be positive")
	}
	switch {
	case l.MaxSeries == 0:
		l.MaxSeries = def.MaxSeries
	case l.MaxSeries < 0:
		return bad("MaxSeries", l.MaxSeries, "must be positive")
	}
	if l.DurationBuckets == nil {
		l.DurationBuckets = def.DurationBuckets
	}
	if len(l.DurationBuckets) == 0 {
		return bad("DurationBuckets", l.DurationBuckets, "must hold at least one bound")
	}
	for i, b := range l.DurationBuckets {
		if !(b > 0) || math.IsInf(b, 0) || (i > 0 && b <= l.DurationBuckets[i-1]) {
			return bad(fmt.Sprintf("DurationBuckets[%d]", i), b, "must be positive, finite and larger than the bound before it")
		}
	}
	l.DurationBuckets = slices.Clone(l.DurationBuckets)
	return l, nil
}
