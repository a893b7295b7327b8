package telemetry_test

import (
	"context"
	"testing"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"

	"github.com/stretchr/testify/require"
)

// TestRetryHookCountsBudgetExhaustion runs real operations through a Retrier whose
// OnAttempt is the hook: only the operation the retry budget stopped is counted, once,
// not the one stopped by its attempt cap nor the one that succeeded.
func TestRetryHookCountsBudgetExhaustion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fc := clock.NewFake(start)
	r := retry.MustNew(retry.Config{Clock: fc, Sleeper: &retry.FakeSleeper{Clock: fc},
		Budgets:   retry.MustNewBudgets(retry.BudgetConfig{Clock: fc}), // one retry per 10s window
		OnAttempt: []func(context.Context, retry.Event){telemetry.RetryHook(f.tel)}})
	fail := func(context.Context, retry.Info) (classify.Classification, error) {
		return classify.ForClass(classify.ClassHTTP5xx), nil
	}
	ok := func(context.Context, retry.Info) (classify.Classification, error) {
		return classify.ForClass(classify.ClassNone), nil
	}
	// The first operation takes the window's only retry, then is refused another.
	res := r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "update", Idempotent: true}, fail)
	require.Equal(t, retry.ReasonBudgetExhausted, res.Reason)
	require.Equal(t, 2, res.Attempts)
	// A second one is refused its first retry.
	res = r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "update", Idempotent: true}, fail)
	require.Equal(t, retry.ReasonBudgetExhausted, res.Reason)
	require.Equal(t, 1, res.Attempts)
	// Neither a success nor an attempt cap is a budget exhaustion.
	require.Equal(t, retry.ReasonSucceeded, r.Do(t.Context(), retry.Operation{Dependency: "crm"}, ok).Reason)
	res = r.Do(t.Context(), retry.Operation{Dependency: "mail", Idempotent: true, Policy: retry.Policy{MaxAttempts: 1}}, fail)
	require.Equal(t, retry.ReasonAttemptsExhausted, res.Reason)

	f.compare(t, `
# HELP agentbreaker_retry_budget_exhausted_total Retries refused because the dependency's retry budget was spent.
# TYPE agentbreaker_retry_budget_exhausted_total counter
agentbreaker_retry_budget_exhausted_total{dependency="crm"} 2
`, "agentbreaker_retry_budget_exhausted_total")

	require.NotPanics(t, func() { telemetry.RetryHook(nil)(t.Context(), retry.Event{Stop: retry.ReasonBudgetExhausted}) })
}
