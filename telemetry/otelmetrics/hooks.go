package otelmetrics

import (
	"context"

	"github.com/agentbreaker/agentbreaker/retry"
)

// RetryHook returns a hook for retry.Config.OnAttempt that reports each logical
// operation the retry budget stopped to m (agentbreaker.retry_budget.exhausted and a
// span event), once per operation. It is telemetry.RetryHook without importing
// package telemetry, which links the Prometheus client.
func (m *Metrics) RetryHook() func(context.Context, retry.Event) {
	return func(ctx context.Context, e retry.Event) {
		if e.Stop == retry.ReasonBudgetExhausted && !e.Retry {
			m.state().HeardRetry(ctx, e) // so that a Wire of the same retrier does not count it again
			m.RetryBudgetExhausted(ctx, e.Dependency)
		}
	}
}
