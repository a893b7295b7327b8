package callbacks

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// operation is the logical operation a call of tool belongs to, as the Retrier tracks
// it. Every path that starts tracking one (a call admitted, a call queued) builds it
// here, since whichever comes first names the operation in every later record.
func (c *Callbacks) operation(inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any) retry.Operation {
	// request_id is the invocation, as in every record of the library (the retry
	// package's records have no function call ID). The breaker's policy version names
	// the policy when the Retrier's own has none, as it does for an operation given
	// the breaker.
	op := retry.Operation{Dependency: dep, Tool: tool, Args: args, Idempotent: !c.mutating[tool], Mutating: c.mutating[tool], RequestID: inv.id}
	if c.cfg.SideEffects.Retry.Policy().Version == "" {
		op.Policy.Version = b.Policy().Version
	}
	// The callbacks hold the breaker's permit for this call; giving the breaker to the
	// Retrier as well would count the call twice and let a half-open probe refuse itself.
	if j := c.cfg.SideEffects.Journal; j != nil {
		op.Reconcile = j.Reconciler()
	}
	return op
}

// admitRetry maps a call admitted by its breaker and bulkhead to its logical operation
// (Config.SideEffects.Retry) and asks for the operation's next attempt. It returns the attempt, or
// the payload that answers a refused call instead of the tool. A call it cannot map
// (bad arguments, too many operations) goes on without retry accounting, loudly, like
// a call without a breaker.
//
// governed says the dependency's throttle is shedding and admitted the call as one of
// a turn the dependency has already served: a retry of it is the throttle's to bound
// and is asked of the operation outside the retry budget (retry.Run.AdmitOutsideBudget).
// The throttle counts it among its requests and holds everything sent to about K
// calls per accepted one; the budget, which knows nothing of the turn, would refuse
// the one call that completes it and leave it with half of its data.
func (c *Callbacks) admitRetry(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any, governed bool) (*retry.Attempt, map[string]any) {
	op := c.operation(inv, tool, dep, b, args)
	confirm := c.confirmsReplays(tool)
	checked := false
	if confirm {
		if tc := ctx.ToolConfirmation(); tc != nil {
			// The user answered a replay confirmation this call asked for earlier.
			if p := c.resumeReplay(ctx, inv, tool, dep, b, args, tc.Confirmed, &op); p != nil {
				return nil, p
			}
			confirm, checked = false, true // approved: the call goes on like any other
		}
	}
	if c.mutating[tool] && c.cfg.SideEffects.Journal != nil && !checked {
		// The UNKNOWN rule across restarts: the Retrier only knows this process's
		// attempts; the journal knows those of a process that crashed mid-call.
		if p := c.checkJournal(ctx, inv, tool, dep, b, args, confirm); p != nil {
			return nil, p
		}
	}
	// Inside an agent tool, the operations are the outermost run's: two sub-agents
	// calling the same tool with the same arguments, or one called again, make one
	// operation whose later attempts are retries (hops.go).
	run, _, err := c.cfg.SideEffects.Retry.Track(trackID(inv), op)
	if err != nil {
		c.log.Warn("agentbreaker: call not tracked by the retry budget; it goes on without one",
			slog.String("tool", tool), slog.String("dependency", dep), c.errAttr(err))
		return nil, nil
	}
	// The callbacks hold the breaker's permit: say which state admitted the call, for
	// the record of the attempt, made or refused.
	state := b.State()
	// AdmitWithState, not Admit(WithAdmittingState(ctx)): a wrapped context would hide
	// ctx's InvocationID from the hooks, and the "retry budget exhausted" record would
	// carry request_id "".
	var a *retry.Attempt
	if governed {
		a, err = run.AdmitOutsideBudget(ctx, state)
	} else {
		a, err = run.AdmitWithState(ctx, state)
	}
	if err == nil {
		retry.ReportBreakerState(a.Context(), state)
		return a, nil
	}
	se, ok := errors.AsType[*retry.StopError](err)
	if !ok || se.Reason == retry.ReasonCanceled {
		return nil, nil // the turn is ending: the tool will see its context done
	}
	p := c.retryRefused(ctx, inv, tool, dep, b, run, se)
	if b.Shadow() {
		return nil, p // recorded as what would have happened; the call is sent
	}
	noteInner(inv, dep, &innerFailure{dep: dep, class: run.Result().Last.Class})
	if confirm && se.Reason == retry.ReasonUnknownOutcome {
		c.askReplay(ctx, tool, dep, run.RequestID(), p)
	}
	return nil, p
}

// retryRefused answers a call whose operation may not make another attempt, and tells
// the hook, the log and the loop guard. The tool is not called.
func (c *Callbacks) retryRefused(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, run *retry.Run, se *retry.StopError) map[string]any {
	last := run.Result().Last
	told := c.refuse(ctx, inv, tool, dep, b, callpath.Refusal{Control: callpath.Stopped, Class: last.Class, State: b.State(), Reason: string(se.Reason), Attempts: se.Attempts})
	in := payloads.Info{Dependency: dep, Tool: tool, Class: last.Class, RetryAfter: statedDelay(b, se.RetryAfter),
		Firm: told.Firm, ShortCircuits: told.Count, Alternatives: c.alternatives(tool)}
	switch se.Reason {
	case retry.ReasonUnknownOutcome:
		return payloads.OutcomeUnknown(in)
	case retry.ReasonReconciledApplied:
		// The dependency confirmed that the earlier attempt was carried out: the
		// answer is "done", and still "do not repeat it".
		p := payloads.OutcomeUnknown(in)
		p[payloads.KeyReason] = payloads.CleanName(dep) + " confirmed that it carried out this request earlier; the reply to it was lost."
		p[payloads.KeyInstruction] = "Do not repeat this action. Tell the user it was done."
		return p
	case retry.ReasonBudgetExhausted, retry.ReasonAttemptsExhausted, retry.ReasonDeadlineExhausted:
		return payloads.BudgetExhausted(in)
	case retry.ReasonNotRetryable:
		// The last attempt failed in a way another cannot fix (a refusal, a bad
		// request): no budget was spent, and saying so would mislead the model.
		return payloads.Failed(in)
	case retry.ReasonInFlight:
		in.Class = classify.ClassBulkheadFull // the same call is already running
		return payloads.Busy(in)
	case retry.ReasonJournalError:
		in.Class = classify.ClassUnclassified
	}
	return payloads.Unavailable(in) // breaker_open (a lower layer's breaker), journal_error
}

// finishAttempt reports a settled call to its retry attempt, once: as finished with its
// classification when it reached (or may have reached) its tool, else as never sent,
// so that the model's next identical call is the same attempt again.
func (c *Callbacks) finishAttempt(ctx context.Context, inv *invocation, cl *call, cls classify.Classification, sent bool) {
	if !sent {
		cl.attempt.Unsent(ctx)
		return
	}
	inv.mu.Lock()
	err := cl.err
	inv.mu.Unlock()
	cl.attempt.Finish(ctx, cls, err)
}
