package callbacks

import (
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// QueueTool says how calls of a tool are queued while its dependency's breaker is open
// (Config.SideEffects.QueueTools).
type QueueTool struct {
	// MaxWait is how long a queued call may wait for its dependency; it expires after
	// that. Required: more than zero.
	MaxWait time.Duration
	// Priority is the call's priority in the queue; below the controller's
	// MinQueuePriority the call is not queued. Defaults to admission.PriorityNormal.
	Priority admission.Priority
	// ReplayPolicy says how the queued call is replayed. Defaults to admission.ReplayAuto.
	ReplayPolicy admission.ReplayPolicy
}

// Queued-call payload: agentbreaker's payload for a call queued instead of answered.
const (
	// TypeQueued is the payload's response_type.
	TypeQueued = classify.PayloadPrefix + "queued"
	// StatusQueued is its status.
	StatusQueued = "queued"
	// KeyQueuedUntil holds when the queued call expires, RFC 3339 in UTC.
	KeyQueuedUntil = "queued_until"
	// KeyQueueItemID holds the queue item's ID in the journal.
	KeyQueueItemID = "queue_item_id"
)

// queue offers a call refused by an open breaker to Config.SideEffects.Admission, for a tool in
// Config.SideEffects.QueueTools. It returns the queued payload, or nil when the call was not
// queued (it is then answered as unavailable). The arguments travel with the queue
// item, in canonical JSON, for the replay (the journal seals them).
//
// A mutation is checked against the UNKNOWN rule first: if an earlier attempt of the
// same call (this invocation's operation, or an unresolved intent in the journal) may
// already have been applied, it is answered "outcome unknown" and not queued, since
// the replay would charge twice. A queued call carries its operation's request id and
// idempotency key, so that the replay and any attempt of the same operation are one
// operation to the dependency.
func (c *Callbacks) queue(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any) map[string]any {
	qt, ok := c.cfg.SideEffects.QueueTools[tool]
	if !ok || c.cfg.SideEffects.Admission == nil {
		return nil
	}
	body, err := retry.CanonicalArgs(args)
	if err != nil {
		c.log.Warn("agentbreaker: call not queued: its arguments cannot be stored", slog.String("tool", tool), slog.String("error", err.Error()))
		return nil
	}
	requestID, key := ctx.FunctionCallID(), ""
	if c.cfg.SideEffects.Retry != nil {
		if run, _, err := c.cfg.SideEffects.Retry.Track(inv.id, c.operation(inv, tool, dep, b, args)); err == nil {
			if reason, _ := run.Done(); reason == retry.ReasonUnknownOutcome && c.mutating[tool] {
				return c.replayRefused(ctx, inv, tool, dep, b, args, "it is not queued for a replay that could apply it twice.", nil)
			}
			requestID, key = run.RequestID(), run.IdempotencyKey()
		}
	}
	if c.mutating[tool] && c.cfg.SideEffects.Journal != nil {
		un, err := c.unresolved(ctx, tool, args)
		if err != nil {
			return c.replayRefused(ctx, inv, tool, dep, b, args, "the journal of earlier attempts could not be read.", err)
		}
		if len(un) > 0 {
			return c.replayRefused(ctx, inv, tool, dep, b, args, "it is not queued for a replay that could apply it twice.", nil)
		}
	}
	if key == "" {
		key = retry.NewIdempotencyKey()
	}
	prio := qt.Priority
	if prio == 0 {
		prio = admission.PriorityNormal
	}
	d, err := c.cfg.SideEffects.Admission.Admit(ctx, admission.Work{
		Dependency: dep, Tool: tool, RequestID: requestID, IdempotencyKey: key,
		Priority: prio, MaxWait: qt.MaxWait, ReplayPolicy: qt.ReplayPolicy, Payload: body,
		NoProbe: c.mutating[tool], // a mutation is never the probe: it waits in the queue
	})
	if err != nil {
		c.log.Warn("agentbreaker: call not queued", slog.String("tool", tool), slog.String("dependency", dep), c.errAttr(err))
		return nil
	}
	if d.Verdict != admission.Queue {
		c.log.Info("agentbreaker: call not queued", slog.String("tool", tool), slog.String("dependency", dep), slog.String("reason", string(d.Reason)))
		if d.Reason == admission.ReasonUnresolved {
			return c.replayRefused(ctx, inv, tool, dep, b, args, "it is not queued for a replay that could apply it twice.", nil)
		}
		return nil
	}
	p := map[string]any{
		payloads.KeyResponseType: TypeQueued,
		payloads.KeyStatus:       StatusQueued,
		payloads.KeyDependency:   payloads.CleanName(dep),
		payloads.KeyTool:         payloads.CleanName(tool),
		payloads.KeyErrorClass:   string(classify.ClassBreakerOpen),
		payloads.KeyRetryAdvised: false,
		KeyQueuedUntil:           d.QueuedUntil.UTC().Format(time.RFC3339),
		KeyQueueItemID:           d.ItemID,
		payloads.KeyReason:       d.Message(c.cfg.SideEffects.QueueLocation),
		payloads.KeyInstruction:  "Do not call this tool again for this request. Tell the user it is queued and will run when the service recovers.",
	}
	c.emit(ctx, Event{Kind: EventQueued, At: c.timeOf(c.nanos()), Dependency: dep, Tool: tool, CallID: ctx.FunctionCallID(),
		InvocationID: inv.id, Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, Verdict: classify.Neutral,
		BreakerState: b.State(), PolicyVersion: b.Policy().Version}, slog.LevelInfo, "agentbreaker: breaker open; call queued",
		slog.String("queue_item_id", d.ItemID), slog.Time("queued_until", d.QueuedUntil))
	return p
}
