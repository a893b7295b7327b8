package retry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

// call is one tool call as a callback sees it: track, admit, report.
func call(t *testing.T, r *retry.Retrier, inv string, op retry.Operation, c classify.Class) (retry.Decision, *retry.StopError, bool) {
	t.Helper()
	run, reissue, err := r.Track(inv, op)
	require.NoError(t, err)
	a, err := run.Admit(t.Context())
	if err != nil {
		var se *retry.StopError
		require.ErrorAs(t, err, &se)
		return retry.Decision{}, se, reissue
	}
	return a.Finish(t.Context(), classify.ForClass(c), nil), nil, reissue
}

func TestTrackModelReissuesCountAsRetries(t *testing.T) {
	rg := newRig(t, retry.Config{})
	op := retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": 7, "fields": []any{"name"}}}

	d, se, reissue := call(t, rg.r, "inv-1", op, classify.ClassConnectionRefused)
	require.Nil(t, se)
	require.False(t, reissue)
	require.True(t, d.Retry)

	// The model calls again with the same arguments written in another order.
	again := retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"fields": []any{"name"}, "id": 7.0}}
	d, se, reissue = call(t, rg.r, "inv-1", again, classify.ClassConnectionRefused)
	require.Nil(t, se)
	require.True(t, reissue)
	require.True(t, d.Retry)

	d, se, _ = call(t, rg.r, "inv-1", again, classify.ClassConnectionRefused)
	require.Nil(t, se)
	require.Equal(t, retry.ReasonAttemptsExhausted, d.Reason)

	// The fourth re-issue is refused without reaching the dependency.
	_, se, _ = call(t, rg.r, "inv-1", again, classify.ClassNone)
	require.NotNil(t, se)
	require.Equal(t, retry.ReasonAttemptsExhausted, se.Reason)
	require.Equal(t, 3, se.Attempts)
	require.ErrorIs(t, se, retry.ErrStopped)

	// Another invocation, or other arguments, is another operation.
	_, se, reissue = call(t, rg.r, "inv-2", op, classify.ClassNone)
	require.Nil(t, se)
	require.False(t, reissue)
	other := retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": 8}}
	_, se, reissue = call(t, rg.r, "inv-1", other, classify.ClassNone)
	require.Nil(t, se)
	require.False(t, reissue)

	require.Equal(t, 2, rg.r.Tracking())
	rg.r.Forget("inv-1")
	rg.r.Forget("inv-2")
	require.Zero(t, rg.r.Tracking())
}

func TestTrackReissuesDrawOnTheSharedBudget(t *testing.T) {
	rg := newRig(t, retry.Config{Budgets: retry.MustNewBudgets(retry.BudgetConfig{MinRetriesPerSecond: -1})})
	// Twenty operations against the dependency earn two retries between them: one
	// when the tenth has started, one when the twentieth has. The model re-issues
	// every failed call at once; the budget is charged by the re-issues.
	var granted []int
	for i := range 20 {
		op := retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": i}}
		d, se, _ := call(t, rg.r, "inv", op, classify.ClassConnectionRefused)
		require.Nil(t, se)
		require.True(t, d.Retry, "a failure spends nothing by itself: operation %d", i)
		d, se, reissue := call(t, rg.r, "inv", op, classify.ClassConnectionRefused)
		require.True(t, reissue)
		if se == nil {
			granted = append(granted, i)
			continue
		}
		require.Equal(t, retry.ReasonBudgetExhausted, se.Reason, "operation %d", i)
		// Refused without reaching the dependency, and for good.
		_, se, _ = call(t, rg.r, "inv", op, classify.ClassNone)
		require.Equal(t, retry.ReasonBudgetExhausted, se.Reason)
	}
	require.Equal(t, []int{9, 19}, granted)
}

// Issue 12b: the budget is charged when the model really re-issues a call, not when an
// attempt fails. Twenty failures the model never retries spend nothing, so the two
// retries the twenty operations earned are there for the two re-issues that come.
func TestTrackChargesOnlyRetriesTheModelMakes(t *testing.T) {
	var refusals []retry.Event
	rg := newRig(t, retry.Config{
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{MinRetriesPerSecond: -1}),
		OnAttempt: []func(context.Context, retry.Event){func(_ context.Context, e retry.Event) {
			if e.Stop == retry.ReasonBudgetExhausted && !e.Retry {
				refusals = append(refusals, e)
			}
		}},
	})
	ops := make([]retry.Operation, 20)
	for i := range ops {
		ops[i] = retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": i}}
		_, se, _ := call(t, rg.r, "inv", ops[i], classify.ClassConnectionRefused)
		require.Nil(t, se)
	}
	b, err := rg.r.Budgets().For("crm")
	require.NoError(t, err)
	require.Zero(t, b.Stats().Granted, "no retry happened yet")
	require.Empty(t, refusals, "nothing was refused: nobody asked")
	for i := range 2 {
		_, se, reissue := call(t, rg.r, "inv", ops[i], classify.ClassNone)
		require.True(t, reissue)
		require.Nil(t, se, "re-issue %d", i)
	}
	_, se, _ := call(t, rg.r, "inv", ops[2], classify.ClassNone)
	require.Equal(t, retry.ReasonBudgetExhausted, se.Reason)
	require.Len(t, refusals, 1, "one real refusal")
	require.Equal(t, int64(2), b.Stats().Granted)
}

// Issue 25 (f): a retry another limit bounds (the callbacks' shedding throttle, for a
// turn the dependency already served) is admitted outside the retry budget: the budget
// neither refuses it nor counts it, and it still refuses the others. The attempt cap
// still holds.
func TestAdmitOutsideBudgetNeitherRefusesNorCounts(t *testing.T) {
	rg := newRig(t, retry.Config{
		Policy:  retry.Policy{MaxAttempts: 2},
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{MinRetriesPerSecond: -1}),
	})
	ops := make([]retry.Operation, 3)
	for i := range ops { // three operations earn no retry at a ratio of 10%
		ops[i] = retry.Operation{Dependency: "crm", Tool: "lookup", Args: map[string]any{"id": i}}
		_, se, _ := call(t, rg.r, "inv", ops[i], classify.ClassConnectionRefused)
		require.Nil(t, se)
	}
	b, err := rg.r.Budgets().For("crm")
	require.NoError(t, err)

	_, se, _ := call(t, rg.r, "inv", ops[0], classify.ClassNone)
	require.Equal(t, retry.ReasonBudgetExhausted, se.Reason, "the budget still refuses an ordinary re-issue")

	run, reissue, err := rg.r.Track("inv", ops[1])
	require.NoError(t, err)
	require.True(t, reissue)
	a, err := run.AdmitOutsideBudget(t.Context(), breaker.Closed)
	require.NoError(t, err, "outside the budget")
	require.Equal(t, 2, a.Info().Number)
	d := a.Finish(t.Context(), classify.ForClass(classify.ClassConnectionRefused), nil)
	require.False(t, d.Retry, "MaxAttempts 2: the cap still holds")
	st := b.Stats()
	require.Zero(t, st.WindowRetries, "not counted")
	require.Equal(t, int64(1), st.Refused, "only the ordinary re-issue was refused")

	run, _, err = rg.r.Track("inv", ops[1])
	require.NoError(t, err)
	_, err = run.AdmitOutsideBudget(t.Context(), breaker.Closed)
	var stop *retry.StopError
	require.ErrorAs(t, err, &stop)
	require.Equal(t, retry.ReasonAttemptsExhausted, stop.Reason)
}

func TestTrackUnknownIsNotReissuedUntilSettled(t *testing.T) {
	var settled atomic.Int32 // what the status lookup says
	rg := newRig(t, retry.Config{})
	op := retry.Operation{Dependency: "mail", Tool: "send_email", Args: map[string]any{"to": "a@example.com"},
		Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
			return retry.Settlement(settled.Load()), nil
		}}

	d, se, _ := call(t, rg.r, "inv", op, classify.ClassTimeout)
	require.Nil(t, se)
	require.Equal(t, retry.ReasonUnknownOutcome, d.Reason)

	_, se, _ = call(t, rg.r, "inv", op, classify.ClassNone)
	require.NotNil(t, se)
	require.Equal(t, retry.ReasonUnknownOutcome, se.Reason, "the model asking again is not a reason to resend")

	settled.Store(int32(retry.NotApplied)) // an operator approved, or the lookup learned more
	d, se, reissue := call(t, rg.r, "inv", op, classify.ClassNone)
	require.Nil(t, se)
	require.True(t, reissue)
	require.Equal(t, retry.ReasonSucceeded, d.Reason)
	run, _, err := rg.r.Track("inv", retry.Operation{Dependency: "mail", Tool: "send_email", Args: map[string]any{"to": "b@example.com"}})
	require.NoError(t, err)
	require.Equal(t, classify.Outcome(0), run.Result().Outcome, "a new operation has no outcome yet")
}

func TestTrackUnknownSettledAsApplied(t *testing.T) {
	var settled atomic.Int32
	rg := newRig(t, retry.Config{})
	op := retry.Operation{Dependency: "mail", Tool: "send_email",
		Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
			return retry.Settlement(settled.Load()), nil
		}}
	call(t, rg.r, "inv", op, classify.ClassConnectionReset)
	settled.Store(int32(retry.Applied))
	_, se, _ := call(t, rg.r, "inv", op, classify.ClassNone)
	require.NotNil(t, se)
	require.Equal(t, retry.ReasonReconciledApplied, se.Reason)
	run, _, err := rg.r.Track("inv", op)
	require.NoError(t, err)
	require.Equal(t, classify.Succeeded, run.Result().Outcome)
}

func TestTrackAfterSuccessStartsANewOperation(t *testing.T) {
	rg := newRig(t, retry.Config{})
	op := retry.Operation{Dependency: "crm", Tool: "lookup"}
	run1, _, err := rg.r.Track("inv", op)
	require.NoError(t, err)
	a, err := run1.Admit(t.Context())
	require.NoError(t, err)
	a.Finish(t.Context(), classify.ForClass(classify.ClassNone), nil)
	run2, reissue, err := rg.r.Track("inv", op)
	require.NoError(t, err)
	require.False(t, reissue)
	require.NotSame(t, run1, run2)
	require.NotEqual(t, run1.IdempotencyKey(), run2.IdempotencyKey())
}

func TestTrackSameCallTwiceAtOnce(t *testing.T) {
	rg := newRig(t, retry.Config{})
	op := retry.Operation{Dependency: "crm", Tool: "update", Args: map[string]any{"x": 1}}
	var wg sync.WaitGroup
	var admitted, inFlight atomic.Int32
	start := make(chan struct{})
	release := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			run, _, err := rg.r.Track("inv", op)
			if err != nil {
				t.Error(err)
				return
			}
			<-start
			a, err := run.Admit(t.Context())
			if err != nil {
				if se, ok := errors.AsType[*retry.StopError](err); ok && se.Reason == retry.ReasonInFlight {
					inFlight.Add(1)
				}
				return
			}
			admitted.Add(1)
			<-release
			a.Finish(t.Context(), classify.ForClass(classify.ClassNone), nil)
		})
	}
	close(start)
	for admitted.Load()+inFlight.Load() < 8 {
		runtimeYield() // the admitted call holds until release; the others return at once
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 1, admitted.Load())
	require.EqualValues(t, 7, inFlight.Load())
}

func TestTrackLimits(t *testing.T) {
	rg := newRig(t, retry.Config{MaxOperationsPerInvocation: 2, MaxInvocations: 2})
	for i := range 2 {
		_, _, err := rg.r.Track("inv", retry.Operation{Dependency: "crm", Tool: "t", Args: map[string]any{"i": i}})
		require.NoError(t, err)
	}
	_, _, err := rg.r.Track("inv", retry.Operation{Dependency: "crm", Tool: "t", Args: map[string]any{"i": 3}})
	require.ErrorIs(t, err, retry.ErrTooManyOperations)
	_, _, err = rg.r.Track("inv2", retry.Operation{Dependency: "crm", Tool: "t"})
	require.NoError(t, err)
	_, _, err = rg.r.Track("inv3", retry.Operation{Dependency: "crm", Tool: "t"})
	require.ErrorIs(t, err, retry.ErrTooManyOperations)
	require.ErrorContains(t, err, "is Forget called")
	_, _, err = rg.r.Track("", retry.Operation{Dependency: "crm"})
	require.ErrorContains(t, err, `invocationID = "": is required`)
	_, _, err = rg.r.Track("inv2", retry.Operation{Dependency: "crm", Args: map[string]any{"f": func() {}}})
	require.ErrorContains(t, err, "Operation.Args")
}

func TestFinishTwiceIsANoOp(t *testing.T) {
	rg := newRig(t, retry.Config{})
	run, err := rg.r.Start(retry.Operation{Dependency: "crm"})
	require.NoError(t, err)
	a, err := run.Admit(t.Context())
	require.NoError(t, err)
	d1 := a.Finish(t.Context(), classify.ForClass(classify.ClassValidation), nil)
	d2 := a.Finish(t.Context(), classify.ForClass(classify.ClassNone), nil)
	require.Equal(t, retry.ReasonNotRetryable, d1.Reason)
	require.Equal(t, d1, d2)
	require.Len(t, rg.ev.list(), 1)
	require.Equal(t, classify.Failed, run.Result().Outcome)
}
