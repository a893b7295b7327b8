package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
)

// journalLog is a retry.Journal that remembers what it was told.
type journalLog struct {
	intents  int
	outcomes []classify.Outcome
}

func (j *journalLog) Intend(context.Context, retry.Info) (string, error) {
	j.intents++
	return "intent", nil
}

func (j *journalLog) Record(_ context.Context, _ retry.Info, c classify.Classification) error {
	j.outcomes = append(j.outcomes, c.Outcome)
	return nil
}

// TestUnsentAttemptIsNotCounted: an attempt refused after Admit and before it was sent
// (a confirmation request in adk-go) leaves the operation as it was: the next Admit is
// the same attempt number, no retry is charged, and the journal records the intent as
// FAILED_BEFORE_SEND.
func TestUnsentAttemptIsNotCounted(t *testing.T) {
	t.Parallel()
	ev := &events{}
	jl := &journalLog{}
	clk := clock.NewFake(time.Time{})
	budgets := retry.MustNewBudgets(retry.BudgetConfig{MinRetriesPerSecond: -1, Clock: clk})
	r := retry.MustNew(retry.Config{Journal: jl, Budgets: budgets, Clock: clk, Policy: retry.Policy{MaxAttempts: 1},
		OnAttempt: []func(context.Context, retry.Event){ev.hook}})
	run, _, err := r.Track("inv", retry.Operation{Dependency: "mail", Tool: "send"})
	require.NoError(t, err)
	a, err := run.Admit(t.Context())
	require.NoError(t, err)
	a.Unsent(t.Context())
	a.Unsent(t.Context()) // a no-op
	require.Equal(t, retry.Decision{}, a.Finish(t.Context(), classify.ForClass(classify.ClassNone), nil), "Finish after Unsent is a no-op")

	// MaxAttempts 1 and no retry budget at all: only an uncounted attempt can go again.
	a, err = run.Admit(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, a.Info().Number)
	d := a.Finish(t.Context(), classify.ForClass(classify.ClassNone), nil)
	require.Equal(t, retry.ReasonSucceeded, d.Reason)
	require.Equal(t, 1, run.Result().Attempts)

	require.Equal(t, 2, jl.intents)
	require.Equal(t, []classify.Outcome{classify.FailedBeforeSend, classify.Succeeded}, jl.outcomes)
	recs := ev.list()
	require.Len(t, recs, 2)
	require.False(t, recs[0].Dispatched)
	require.Equal(t, classify.ClassCanceled, recs[0].ErrorClass)
	require.True(t, recs[1].Dispatched)
}
