package retry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Allows answers as TryRetry would, and charges nothing.
func TestBudgetAllowsChargesNothing(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))
	b, err := retry.NewBudget(retry.BudgetConfig{Clock: clk})
	require.NoError(t, err)
	b.Request()
	for range 5 {
		require.True(t, b.Allows(), "the floor's one retry")
	}
	require.Zero(t, b.Stats().Granted)
	require.True(t, b.TryRetry())
	require.False(t, b.Allows())
	require.False(t, b.TryRetry())
	clk.Advance(10 * time.Second) // the default budget window
	require.True(t, b.Allows(), "a new window")
}

// NextRefusal says what the next Admit would say, without recording an attempt.
func TestNextRefusalPeeks(t *testing.T) {
	// The default budget: a floor of one retry per window. Its clock stands still.
	rg := newRig(t, retry.Config{Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: clock.NewFake(time.Time{})})})
	op := retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": 7}}
	key, err := retry.OperationKey(op.Tool, op.Args)
	require.NoError(t, err)
	require.Nil(t, rg.r.Tracked("inv-1", key), "nothing tracked yet, and Tracked creates nothing")
	require.Zero(t, rg.r.Tracking())

	_, se, _ := call(t, rg.r, "inv-1", op, classify.ClassConnectionRefused)
	require.Nil(t, se)
	run := rg.r.Tracked("inv-1", key)
	require.NotNil(t, run)
	require.Equal(t, retry.Reason(""), run.NextRefusal(), "a retry may go: the budget's floor")
	require.Equal(t, retry.Reason(""), run.NextRefusal(), "asking again charged nothing")

	_, se, _ = call(t, rg.r, "inv-1", op, classify.ClassConnectionRefused) // takes the floor's retry
	require.Nil(t, se)
	require.Equal(t, retry.ReasonBudgetExhausted, run.NextRefusal())
	_, se, _ = call(t, rg.r, "inv-1", op, classify.ClassConnectionRefused)
	require.NotNil(t, se)
	require.Equal(t, retry.ReasonBudgetExhausted, se.Reason, "Admit agrees")
	require.Equal(t, retry.ReasonBudgetExhausted, run.NextRefusal())
}
