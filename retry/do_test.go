package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func withRetryAfter(c classify.Class, d time.Duration) classify.Classification {
	out := classify.ForClass(c)
	out.RetryAfter = d
	return out
}

func TestDo(t *testing.T) {
	ok, unknown, refused := classify.ClassNone, classify.ClassTimeout, classify.ClassConnectionRefused
	tests := []struct {
		name       string
		op         retry.Operation
		policy     retry.Policy
		script     *script
		wantOut    classify.Outcome
		wantReason retry.Reason
		wantCalls  int
		wantSleeps []time.Duration
	}{
		{
			name: "first attempt succeeds", script: answers(ok),
			wantOut: classify.Succeeded, wantReason: retry.ReasonSucceeded, wantCalls: 1,
		},
		{
			name: "refused twice then succeeds, with doubling jitter", script: answers(refused, refused, ok),
			wantOut: classify.Succeeded, wantReason: retry.ReasonSucceeded, wantCalls: 3,
			wantSleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
		},
		{
			name: "attempts run out", script: answers(refused),
			wantOut: classify.FailedBeforeSend, wantReason: retry.ReasonAttemptsExhausted, wantCalls: 3,
			wantSleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
		},
		{
			name: "a healthy refusal is not retried", script: answers(classify.ClassValidation),
			wantOut: classify.Failed, wantReason: retry.ReasonNotRetryable, wantCalls: 1,
		},
		{
			name: "UNKNOWN on a mutation is not retried", script: answers(unknown, ok),
			wantOut: classify.Unknown, wantReason: retry.ReasonUnknownOutcome, wantCalls: 1,
		},
		{
			name: "UNKNOWN on an idempotent operation is retried",
			op:   retry.Operation{Idempotent: true}, script: answers(unknown, ok),
			wantOut: classify.Succeeded, wantReason: retry.ReasonSucceeded, wantCalls: 2,
			wantSleeps: []time.Duration{50 * time.Millisecond},
		},
		{
			name: "UNKNOWN stays the outcome when a later definitive failure ends an idempotent operation",
			op:   retry.Operation{Idempotent: true}, script: answers(unknown, classify.ClassValidation),
			wantOut: classify.Unknown, wantReason: retry.ReasonNotRetryable, wantCalls: 2,
			wantSleeps: []time.Duration{50 * time.Millisecond},
		},
		{
			name: "reconciliation proves not applied: retried",
			op: retry.Operation{Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
				return retry.NotApplied, nil
			}},
			script:  answers(unknown, ok),
			wantOut: classify.Succeeded, wantReason: retry.ReasonSucceeded, wantCalls: 2,
			wantSleeps: []time.Duration{50 * time.Millisecond},
		},
		{
			name: "reconciliation proves applied: done without resending",
			op: retry.Operation{Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
				return retry.Applied, nil
			}},
			script:  answers(unknown),
			wantOut: classify.Succeeded, wantReason: retry.ReasonReconciledApplied, wantCalls: 1,
		},
		{
			name: "reconciliation cannot tell: not retried",
			op: retry.Operation{Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
				return retry.Unsettled, nil
			}},
			script:  answers(unknown),
			wantOut: classify.Unknown, wantReason: retry.ReasonUnknownOutcome, wantCalls: 1,
		},
		{
			name: "reconciliation fails: not retried",
			op: retry.Operation{Reconcile: func(context.Context, retry.Info) (retry.Settlement, error) {
				return retry.NotApplied, errors.New("status endpoint down")
			}},
			script:  answers(unknown),
			wantOut: classify.Unknown, wantReason: retry.ReasonUnknownOutcome, wantCalls: 1,
		},
		{
			name:    "server-stated delay is a floor on the backoff",
			script:  (&script{}).with(withRetryAfter(classify.ClassHTTP429, 7*time.Second)).with(classify.ForClass(ok)),
			wantOut: classify.Succeeded, wantReason: retry.ReasonSucceeded, wantCalls: 2,
			wantSleeps: []time.Duration{7 * time.Second},
		},
		{
			name:    "server-stated delay past the deadline ends the operation at once",
			script:  (&script{}).with(withRetryAfter(classify.ClassHTTP429, 2*time.Minute)),
			wantOut: classify.Failed, wantReason: retry.ReasonDeadlineExhausted, wantCalls: 1,
		},
		{
			name:   "backoff that would end past the deadline is not slept",
			policy: retry.Policy{Deadline: 300 * time.Millisecond, BaseDelay: time.Second, MaxDelay: time.Second},
			script: answers(refused), wantOut: classify.FailedBeforeSend, wantReason: retry.ReasonDeadlineExhausted, wantCalls: 1,
		},
		{
			name:    "one attempt means no retry",
			policy:  retry.Policy{MaxAttempts: 1},
			script:  answers(refused, ok),
			wantOut: classify.FailedBeforeSend, wantReason: retry.ReasonAttemptsExhausted, wantCalls: 1,
		},
		{
			name:    "lower layer's open breaker ends the operation",
			script:  answers(refused, classify.ClassBreakerOpen),
			wantOut: classify.FailedBeforeSend, wantReason: retry.ReasonBreakerOpen, wantCalls: 2,
			wantSleeps: []time.Duration{50 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, retry.Config{Policy: tt.policy})
			tt.op.Dependency = "crm"
			res := rg.r.Do(t.Context(), tt.op, tt.script.fn)
			require.Equal(t, tt.wantOut, res.Outcome, "outcome")
			require.Equal(t, tt.wantReason, res.Reason, "reason")
			require.Equal(t, tt.wantCalls, tt.script.count(), "attempts the dependency saw")
			require.Equal(t, tt.wantCalls, res.Attempts)
			require.Equal(t, tt.wantSleeps, rg.sleep.Slept())
			// Every attempt carries the operation's single idempotency key.
			require.NotEmpty(t, res.IdempotencyKey)
			for _, k := range tt.script.keys {
				require.Equal(t, res.IdempotencyKey, k)
			}
			require.Len(t, rg.ev.list(), tt.wantCalls, "one record per attempt")
		})
	}
}

func TestDoDeadlineCountsTimeSpentInAttempts(t *testing.T) {
	rg := newRig(t, retry.Config{Policy: retry.Policy{MaxAttempts: 10, Deadline: 90 * time.Second}})
	s := answers(classify.ClassConnectionRefused)
	s.each = func(int) { rg.clk.Advance(50 * time.Second) } // each attempt hangs 50s
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm"}, s.fn)
	require.Equal(t, retry.ReasonDeadlineExhausted, res.Reason)
	require.Equal(t, 2, s.count(), "the second attempt ends at 100s, past the 90s deadline")
	require.Len(t, rg.sleep.Slept(), 1)
}

func TestDoAttemptContextEndsAtTheDeadline(t *testing.T) {
	rg := newRig(t, retry.Config{Policy: retry.Policy{Deadline: time.Minute}})
	var dl time.Time
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm"}, func(ctx context.Context, a retry.Info) (classify.Classification, error) {
		var ok bool
		dl, ok = ctx.Deadline()
		require.True(t, ok)
		require.Equal(t, rg.clk.Now().Add(time.Minute), a.Deadline)
		return classify.ForClass(classify.ClassNone), nil
	})
	require.Equal(t, retry.ReasonSucceeded, res.Reason)
	require.WithinDuration(t, time.Now().Add(time.Minute), dl, 30*time.Second)
}

func TestDoZeroClassificationComesFromTheError(t *testing.T) {
	rg := newRig(t, retry.Config{})
	calls := 0
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm"}, func(ctx context.Context, a retry.Info) (classify.Classification, error) {
		calls++
		if calls == 1 {
			return classify.Classification{}, context.DeadlineExceeded // our own timeout: UNKNOWN
		}
		return classify.Classification{}, nil
	})
	require.Equal(t, retry.ReasonUnknownOutcome, res.Reason)
	require.Equal(t, classify.ClassTimeout, res.Last.Class)
	require.ErrorIs(t, res.Err, context.DeadlineExceeded)
	require.Equal(t, 1, calls)
}

func TestDoBreaker(t *testing.T) {
	t.Run("open before the first attempt: nothing is sent", func(t *testing.T) {
		rg := newRig(t, retry.Config{})
		b := breaker.MustNew(breaker.Config{Name: "crm", Clock: rg.clk, Policy: breaker.Policy{Version: "crm-v2", Cooldown: 30 * time.Second, Jitter: -1}})
		b.ForceOpen("maintenance")
		s := answers(classify.ClassNone)
		res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Breaker: b}, s.fn)
		require.Equal(t, classify.FailedBeforeSend, res.Outcome)
		require.Equal(t, retry.ReasonBreakerOpen, res.Reason)
		require.Equal(t, classify.ClassBreakerOpen, res.Last.Class)
		require.ErrorIs(t, res.Err, breaker.ErrOpen)
		require.Zero(t, s.count())
		require.Zero(t, res.Attempts)
		ev := rg.ev.list()
		require.Len(t, ev, 1)
		require.Equal(t, "forced_open", ev[0].BreakerState)
		require.Equal(t, "crm-v2", ev[0].PolicyVersion, "the breaker's policy version when the retry policy has none")
		require.False(t, ev[0].Dispatched)
	})
	t.Run("opens between attempts: the operation ends FAILED_BEFORE_SEND", func(t *testing.T) {
		rg := newRig(t, retry.Config{})
		b := breaker.MustNew(breaker.Config{Name: "crm", Clock: rg.clk, Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}})
		s := answers(classify.ClassConnectionRefused)
		res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Breaker: b}, s.fn)
		require.Equal(t, classify.FailedBeforeSend, res.Outcome)
		require.Equal(t, retry.ReasonBreakerOpen, res.Reason)
		require.Equal(t, 1, s.count())
		require.Equal(t, breaker.Open, b.State())
		require.ErrorIs(t, res.Err, breaker.ErrOpen)
		ev := rg.ev.list()
		require.Len(t, ev, 2)
		require.Equal(t, "closed", ev[0].BreakerState)
		require.True(t, ev[0].Retry)
		require.Equal(t, "open", ev[1].BreakerState)
		require.Equal(t, retry.ReasonBreakerOpen, ev[1].Stop)
	})
	t.Run("each outcome reaches the breaker with its verdict and retry-after", func(t *testing.T) {
		rg := newRig(t, retry.Config{})
		b := breaker.MustNew(breaker.Config{Name: "crm", Clock: rg.clk, Policy: breaker.Policy{MinimumCalls: 3, Jitter: -1}})
		s := (&script{}).with(classify.ForClass(classify.ClassValidation))
		rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Breaker: b}, s.fn)
		require.EqualValues(t, 1, b.Snapshot().Window.Calls)
		require.EqualValues(t, 0, b.Snapshot().Window.Failures, "a validation error proves the dependency healthy")

		s = (&script{}).with(withRetryAfter(classify.ClassHTTP429, 40*time.Second))
		rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Breaker: b, Policy: retry.Policy{MaxAttempts: 2}}, s.fn)
		require.Equal(t, breaker.Open, b.State(), "two 429s of three calls trip it")
		require.Equal(t, 40*time.Second, b.RetryAfter(), "the stated delay is the breaker's floor too")
	})
}

func TestDoBudgetExhausted(t *testing.T) {
	rg := newRig(t, retry.Config{Budgets: nil})
	bs := retry.MustNewBudgets(retry.BudgetConfig{Clock: rg.clk, MinRetriesPerSecond: -1})
	r := retry.MustNew(retry.Config{Clock: rg.clk, Sleeper: rg.sleep, Budgets: bs})
	s := answers(classify.ClassConnectionRefused)
	res := r.Do(t.Context(), retry.Operation{Dependency: "crm"}, s.fn)
	require.Equal(t, retry.ReasonBudgetExhausted, res.Reason, "one operation earns a tenth of a retry")
	require.Equal(t, 1, s.count())
}

func TestDoCanceled(t *testing.T) {
	t.Run("before the first attempt", func(t *testing.T) {
		rg := newRig(t, retry.Config{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		s := answers(classify.ClassNone)
		res := rg.r.Do(ctx, retry.Operation{Dependency: "crm"}, s.fn)
		require.Equal(t, retry.ReasonCanceled, res.Reason)
		require.Equal(t, classify.FailedBeforeSend, res.Outcome)
		require.Zero(t, s.count())
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		rg := newRig(t, retry.Config{})
		ctx, cancel := context.WithCancel(t.Context())
		s := answers(classify.ClassConnectionRefused)
		s.each = func(int) { cancel() }
		res := rg.r.Do(ctx, retry.Operation{Dependency: "crm"}, s.fn)
		require.Equal(t, retry.ReasonCanceled, res.Reason)
		require.Equal(t, 1, s.count())
	})
}

func TestDoInvalidOperation(t *testing.T) {
	rg := newRig(t, retry.Config{})
	tests := []struct {
		name    string
		op      retry.Operation
		wantErr string
	}{
		{"no dependency", retry.Operation{}, `retry: Operation.Dependency = "": is required`},
		{"bad policy", retry.Operation{Dependency: "crm", Policy: retry.Policy{MaxAttempts: -3}}, "Operation.Policy.MaxAttempts = -3"},
		{"arguments that cannot be hashed", retry.Operation{Dependency: "crm", Tool: "send", Args: map[string]any{"c": make(chan int)}}, `Operation.Args = 1 argument(s) of tool "send"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := answers(classify.ClassNone)
			res := rg.r.Do(t.Context(), tt.op, s.fn)
			require.Equal(t, retry.ReasonInvalidOperation, res.Reason)
			require.ErrorContains(t, res.Err, tt.wantErr)
			require.Zero(t, s.count())
		})
	}
}
