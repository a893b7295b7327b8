package classify

import (
	"context"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// BreakerReport is what the circuit breaker should record for the call: Healthy is a
// success, Counts a failure, Neutral is ignored, and the server's stated delay goes
// along as a floor on the cooldown.
func (c Classification) BreakerReport() breaker.Report {
	r := breaker.Report{RetryAfter: c.RetryAfter}
	switch c.Verdict {
	case Healthy:
		r.Verdict = breaker.Success
	case Counts:
		r.Verdict = breaker.Failure
	default:
		r.Verdict = breaker.Ignore
	}
	return r
}

// Execute runs fn under b in one call, as gobreaker's Execute does: it asks b for a
// permit, runs fn, classifies fn's error with the default rules ([Error]) and reports
// the classification. It returns fn's error, or a *breaker.OpenError (which
// errors.Is matches with breaker.ErrOpen) without running fn when b does not admit
// the call. A nil b (a tool the dependency map exempts) runs fn unguarded. If fn
// panics, the permit is given back unreported, so a half-open breaker is not
// wedged, and the panic goes on.
func Execute(ctx context.Context, b *breaker.Breaker, fn func(context.Context) error) error {
	return execute(ctx, b, fn, Error)
}

// Execute is [Execute] with this classifier's rules.
func (c *Classifier) Execute(ctx context.Context, b *breaker.Breaker, fn func(context.Context) error) error {
	return execute(ctx, b, fn, func(ctx context.Context, err error) Classification {
		return c.Classify(Input{Context: ctx, Err: err})
	})
}

func execute(ctx context.Context, b *breaker.Breaker, fn func(context.Context) error, classify func(context.Context, error) Classification) error {
	if b == nil {
		return fn(ctx)
	}
	permit, err := b.Allow()
	if err != nil {
		return err
	}
	reported := false
	defer func() {
		if !reported {
			permit.Ignore()
		}
	}()
	err = fn(ctx)
	permit.Report(classify(ctx, err).BreakerReport())
	reported = true
	return err
}
