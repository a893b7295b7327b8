package retry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

// TestRetryStormIsHeldToTheBudget runs many callers, through two Retriers that share
// one budget registry, against a dependency that is down. Without a budget each would
// make three attempts; with it, retries stay within 10% of operations plus the floor.
func TestRetryStormIsHeldToTheBudget(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	budgets := retry.MustNewBudgets(retry.BudgetConfig{Clock: fc})
	mk := func() *retry.Retrier {
		return retry.MustNew(retry.Config{Clock: fc, Sleeper: &retry.FakeSleeper{}, Budgets: budgets})
	}
	rs := []*retry.Retrier{mk(), mk()}
	const callers = 300
	s := answers(classify.ClassConnectionReset) // UNKNOWN, so only idempotent operations retry
	var wg sync.WaitGroup
	results := make([]retry.Result, callers)
	for i := range callers {
		wg.Go(func() {
			results[i] = rs[i%2].Do(t.Context(), retry.Operation{Dependency: "search", Idempotent: true}, s.fn)
		})
	}
	wg.Wait()

	b, err := budgets.For("search")
	require.NoError(t, err)
	st := b.Stats()
	require.EqualValues(t, callers, st.Requests)
	require.LessOrEqual(t, st.Granted, int64(callers/10+1))
	require.Positive(t, st.Granted)
	require.Equal(t, callers+int(st.Granted), s.count(), "the dependency saw each operation once plus the budgeted retries")
	exhausted := 0
	for _, r := range results {
		require.Equal(t, classify.Unknown, r.Outcome)
		if r.Reason == retry.ReasonBudgetExhausted {
			exhausted++
		}
	}
	require.Greater(t, exhausted, callers/2)
}
