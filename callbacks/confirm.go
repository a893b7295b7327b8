package callbacks

import (
	"context"
	"log/slog"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Keys of the payload sent with a replay confirmation request (Config.SideEffects.ConfirmUnknownReplays),
// which a client may show next to the hint.
const (
	ConfirmKeyDependency = "dependency"
	ConfirmKeyTool       = "tool"
	ConfirmKeyRequestID  = "request_id"
)

// confirmsReplays says whether a refused repeat of tool is put to the user.
func (c *Callbacks) confirmsReplays(tool string) bool {
	return c.cfg.SideEffects.ConfirmUnknownReplays && c.cfg.SideEffects.Journal != nil && c.mutating[tool]
}

// askReplay asks the user, through adk-go's tool confirmation, whether to send again
// a call refused because an earlier attempt's outcome is unknown. The payload p, which
// answers the call meanwhile, is told that the question was asked. adk-go stops the
// turn after this call and, when the user answers, runs the same call again with the
// answer in its context (resumeReplay).
func (c *Callbacks) askReplay(ctx agent.Context, tool, dep, requestID string, p map[string]any) {
	hint := "An earlier attempt of " + tool + " with these same arguments got no answer from " +
		payloads.CleanName(dep) + ", so it may already have been carried out. Confirm to send it again " +
		"(with the same idempotency key, so a service that honours it will not apply it twice); " +
		"decline to leave it for an operator to check."
	payload := map[string]any{ConfirmKeyDependency: dep, ConfirmKeyTool: tool, ConfirmKeyRequestID: requestID}
	if err := ctx.RequestConfirmation(hint, payload); err != nil {
		c.log.Warn("agentbreaker: replay confirmation not requested; the call stays refused",
			slog.String("tool", tool), slog.String("dependency", dep), slog.String("error", err.Error()))
		return
	}
	p[payloads.KeyInstruction] = "Do not repeat this action. The user has been asked whether to send it again; wait for their answer."
}

// resumeReplay handles the user's answer to a replay confirmation. Confirmed, it
// approves the call's unresolved intents and points op at the newest one's request id
// and idempotency key, so the call goes out as a replay of that attempt; it returns nil.
// Declined, or when the journal cannot be read or updated, it returns the
// outcome-unknown payload that answers the call instead; nothing is discarded.
func (c *Callbacks) resumeReplay(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any, confirmed bool, op *retry.Operation) map[string]any {
	j := c.cfg.SideEffects.Journal
	if !confirmed {
		return c.replayRefused(ctx, inv, tool, dep, b, args, "the user chose not to send it again.", nil)
	}
	intents, err := c.unresolved(ctx, tool, args)
	if err != nil {
		return c.replayRefused(ctx, inv, tool, dep, b, args, "the journal of earlier attempts could not be read.", err)
	}
	for _, in := range intents {
		if in.State == journal.StateOpen {
			// An attempt is in flight (or a crash left it open until Reconcile runs):
			// approving it would race the attempt's own outcome.
			return c.replayRefused(ctx, inv, tool, dep, b, args, "an attempt of it may still be running.", nil)
		}
	}
	var newest *journal.Intent
	for i := range intents {
		in := &intents[i]
		if err := j.Approve(ctx, in.ID); err != nil {
			// Most likely an operator settled it meanwhile; sending without knowing
			// how is the one thing this must not do.
			return c.replayRefused(ctx, inv, tool, dep, b, args, "its earlier attempt could not be approved for a replay.", err)
		}
		if newest == nil || in.CreatedAt.After(newest.CreatedAt) {
			newest = in
		}
	}
	if newest != nil {
		op.RequestID, op.IdempotencyKey = newest.RequestID, newest.IdempotencyKey
	}
	c.log.Info("agentbreaker: the user confirmed a replay of a call with an unknown outcome",
		slog.String("tool", tool), slog.String("dependency", dep), slog.Int("approved_intents", len(intents)))
	return nil
}

// unresolved returns the journal's unresolved intents of the same tool and arguments,
// leaving out the open ones this process wrote: those are calls in flight here, which
// the Retrier already tells apart (in flight, or unknown after it ends).
func (c *Callbacks) unresolved(ctx context.Context, tool string, args map[string]any) ([]journal.Intent, error) {
	j := c.cfg.SideEffects.Journal
	hash, _, err := j.HashArgs(args)
	if err != nil {
		return nil, err
	}
	list, err := j.Unresolved(ctx, tool, hash)
	if err != nil {
		return nil, err
	}
	o, ok := j.(interface{ Owner() string })
	if !ok {
		return list, nil
	}
	out := list[:0]
	for _, in := range list {
		if in.State == journal.StateOpen && in.Owner == o.Owner() {
			continue
		}
		out = append(out, in)
	}
	return out, nil
}

// checkJournal is the UNKNOWN rule across restarts: before a mutation is sent, the
// journal's unresolved intents of the same tool and arguments (an earlier attempt, in
// this process or one that crashed, whose outcome nobody has settled) stop it. It
// returns the payload that answers the call instead, or nil to let it go. With
// ConfirmUnknownReplays the user is asked, and a confirmed call is resent under the
// original attempt's key (resumeReplay).
func (c *Callbacks) checkJournal(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any, confirm bool) map[string]any {
	un, err := c.unresolved(ctx, tool, args)
	if err != nil {
		return c.replayRefused(ctx, inv, tool, dep, b, args, "the journal of earlier attempts could not be read.", err)
	}
	if len(un) == 0 {
		return nil
	}
	p := c.replayRefused(ctx, inv, tool, dep, b, args, "nobody has confirmed whether it was.", nil)
	if confirm {
		newest := un[0]
		for _, in := range un[1:] {
			if in.CreatedAt.After(newest.CreatedAt) {
				newest = in
			}
		}
		c.askReplay(ctx, tool, dep, newest.RequestID, p)
	}
	return p
}

// replayRefused answers a resumed call that is not sent: the user declined, or the
// journal failed. The event is a retry refusal for the unknown outcome.
func (c *Callbacks) replayRefused(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any, why string, err error) map[string]any {
	in := c.payloadInfo(ctx, tool, dep, args)
	p := payloads.OutcomeUnknown(in)
	p[payloads.KeyReason] = "an earlier attempt may already have been carried out by " + payloads.CleanName(dep) + ", and " + why
	e := Event{Kind: EventRetryRefused, At: c.timeOf(c.nanos()), Dependency: dep, Tool: tool, CallID: ctx.FunctionCallID(),
		InvocationID: inv.id, Outcome: classify.FailedBeforeSend, Class: in.Class, Verdict: classify.Neutral,
		BreakerState: b.State(), PolicyVersion: b.Policy().Version, RetryReason: retry.ReasonUnknownOutcome}
	attrs := []slog.Attr{slog.String("retry_reason", string(retry.ReasonUnknownOutcome)), slog.String("why", why)}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, c.errAttr(err))
	}
	c.emit(ctx, e, level, "agentbreaker: replay of a call with an unknown outcome not sent", attrs...)
	return p
}
