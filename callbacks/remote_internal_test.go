package callbacks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/retry"
)

// The callers' scopes a remote service tracks are bounded: forgotten when idle past
// IdleInvocationTimeout, and the oldest first beyond maxServed, with their operations.
func TestServeRemoteForgetsScopes(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))
	r, err := retry.New(retry.Config{Clock: fake, Sleeper: &retry.FakeSleeper{}, Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: fake})})
	require.NoError(t, err)
	c := MustNew(Config{Dependencies: dependencymap.MustNew(dependencymap.Config{Clock: fake}), Clock: fake,
		SideEffects: SideEffects{Retry: r}})
	key, err := retry.OperationKey("crm_lookup", nil)
	require.NoError(t, err)
	op := retry.Operation{Dependency: "crm", Tool: "crm_lookup", Key: key}
	serve := func(caller string) {
		ctx, done := c.ServeRemote(context.Background(), caller)
		require.Equal(t, "a2a:"+caller, c.OperationScope(ctx))
		_, _, err := r.Track("a2a:"+caller, op)
		require.NoError(t, err)
		_, failed := done()
		require.False(t, failed)
	}
	for i := range maxServed + 10 {
		serve(fmt.Sprint("c", i))
	}
	require.Equal(t, maxServed, r.Tracking(), "the oldest scopes were forgotten")
	require.Nil(t, r.Tracked("a2a:c0", key), "the first scope is gone")
	require.NotNil(t, r.Tracked(fmt.Sprint("a2a:c", maxServed+9), key), "the newest is kept")
	fake.Advance(c.idle)
	serve("late")
	require.Equal(t, 1, r.Tracking(), "idle scopes are forgotten")

	// No caller: the task's own invocation; a failure noted below is reported.
	ctx, done := c.ServeRemote(context.Background(), "")
	noteScope(scopeOf(ctx), "crm", &innerFailure{dep: "crm", class: classify.ClassHTTP5xx, retryable: true})
	f, failed := done()
	require.True(t, failed)
	require.Equal(t, InnerFailure{Dependency: "crm", Class: classify.ClassHTTP5xx, Retryable: true}, f)
	require.Empty(t, c.OperationScope(ctx), "not an agent context")
}
