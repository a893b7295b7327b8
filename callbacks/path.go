package callbacks

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// pathSink is the call path's Sink: the Events, Observer calls and log records of a
// refused or settled call, the same for every hop (tools here, a remote agent's
// requests in a2aguard).
type pathSink struct{ c *Callbacks }

// refusalWords are the records of one kind of refusal: the message, and the message
// of the firm Event once the model keeps calling.
var refusalWords = [...]struct{ msg, firm string }{
	callpath.Open: {"agentbreaker: breaker open; call short-circuited",
		"agentbreaker: model keeps calling an unavailable tool; payload is now firm"},
	callpath.Held: {"agentbreaker: the dependency asked for a delay; call answered locally until it passes",
		"agentbreaker: model keeps calling a tool whose dependency asked for a delay; payload is now firm"},
	callpath.Shed: {"agentbreaker: dependency partly overloaded; call shed by its throttle",
		"agentbreaker: model keeps calling a partly overloaded tool; payload is now firm"},
	callpath.Limited: {"agentbreaker: adaptive concurrency limit reached; call refused, not counted",
		"agentbreaker: model keeps calling a tool at its concurrency limit; payload is now firm"},
	callpath.Full: {"agentbreaker: bulkhead full of quick calls; call rejected, not counted",
		"agentbreaker: model keeps calling a saturated tool; payload is now firm"},
	callpath.Stopped: {"agentbreaker: retry refused; call answered without running the tool",
		"agentbreaker: model keeps repeating a refused call; payload is now firm"},
}

// Refused reports a call the path answered without sending: one Event and record of
// the refusing stage's kind, the Observer's, and the loop guard's count for the
// invocation (with its firm Event the first time).
func (s pathSink) Refused(ctx context.Context, cl *callpath.Call, r callpath.Refusal) callpath.Told {
	c := s.c
	var inv *invocation
	if ac, ok := ctx.(agent.Context); ok {
		inv = c.invocation(ac, false)
	}
	var told callpath.Told
	var firstFirm bool
	if inv != nil {
		d := inv.tracker.ShortCircuit(cl.Dependency)
		told, firstFirm = callpath.Told{Count: d.Count, Firm: d.Firm}, d.FirstFirm
	}
	e := refusalEvent(cl, r, told.Count)
	e.At = c.timeOf(c.nanos())
	words := refusalWords[r.Control]
	level, msg := slog.LevelInfo, words.msg
	var extra []slog.Attr
	switch r.Control {
	case callpath.Held:
		extra = []slog.Attr{slog.Duration("retry_after", r.RetryAfter)}
	case callpath.Shed:
		extra = []slog.Attr{slog.String("priority", r.Priority.String())}
	case callpath.Limited:
		extra = []slog.Attr{slog.String("priority", r.Priority.String()), slog.Int("limit", r.Limit)}
	case callpath.Full:
		if r.Counts {
			level, msg = slog.LevelWarn, "agentbreaker: bulkhead full of slow calls; call rejected and counted as a failure"
		}
	case callpath.Stopped:
		extra = []slog.Attr{slog.String("retry_reason", string(r.Reason)), slog.Int("attempts", r.Attempts)}
	}
	c.emit(ctx, e, level, msg, extra...)
	c.observeRefusal(ctx, cl, r)
	if r.Control == callpath.Full && r.Sustained && r.State == breaker.Closed {
		e.Kind = EventBulkheadSaturated
		c.emit(ctx, e, slog.LevelWarn, "agentbreaker: bulkhead rejections are sustained while the breaker is closed")
	}
	if firstFirm {
		e.Kind = EventLoopGuardFirm
		c.emit(ctx, e, slog.LevelWarn, words.firm)
	}
	return told
}

// controlNames are the controls a would_refuse record names, by stage.
var controlNames = [...]string{callpath.Held: "hold", callpath.Open: "breaker", callpath.Shed: "throttle",
	callpath.Limited: "limit", callpath.Full: "bulkhead", callpath.Stopped: "retry"}

// wouldTell is the payload each control would have answered with.
var wouldTell = [...]string{callpath.Held: "unavailable", callpath.Open: "unavailable", callpath.Shed: "shed",
	callpath.Limited: "busy", callpath.Full: "busy", callpath.Stopped: "retry_refused"}

// Shadowed reports a refusal a dependency in shadow mode did not enforce: one
// would_refuse Event and record (what the control would have done, and what the
// model would have been told), and the Observer's count. The loop guard counts
// nothing: the model was told nothing.
func (s pathSink) Shadowed(ctx context.Context, cl *callpath.Call, r callpath.Refusal) {
	c := s.c
	e := refusalEvent(cl, r, 0)
	e.Kind, e.WouldRefuse, e.At = EventWouldRefuse, controlNames[r.Control], c.timeOf(c.nanos())
	c.emit(ctx, e, slog.LevelInfo, "agentbreaker: shadow: a control would have refused the call; it was sent",
		slog.String("control", e.WouldRefuse), slog.String("would_tell", wouldTell[r.Control]),
		slog.Duration("retry_after", r.RetryAfter))
	if sh, ok := c.obs.(observe.Shadow); ok {
		func() {
			defer c.recoverObserver("WouldRefuse", cl.Dependency, cl.Tool, cl.CallID)
			sh.WouldRefuse(ctx, cl.Dependency, e.WouldRefuse)
		}()
	}
}

// refusalEvent is the Event of a refusal, without its time.
func refusalEvent(cl *callpath.Call, r callpath.Refusal, count int) Event {
	e := Event{Kind: EventShortCircuit, Dependency: cl.Dependency, Tool: cl.Tool, CallID: cl.CallID, InvocationID: cl.InvocationID,
		Outcome: classify.FailedBeforeSend, Class: r.Class, Verdict: classify.Neutral, BreakerState: r.State,
		PolicyVersion: cl.Breaker.Policy().Version, ShortCircuits: count}
	switch r.Control {
	case callpath.Open:
		e.Class = classify.ClassBreakerOpen
	case callpath.Shed:
		e.Kind, e.Priority = EventShed, r.Priority
	case callpath.Limited:
		e.Kind, e.Class, e.Priority = EventBulkheadRejected, classify.ClassBulkheadFull, r.Priority
	case callpath.Full:
		e.Kind, e.Class = EventBulkheadRejected, classify.ClassBulkheadFull
		if r.Counts {
			e.Verdict = classify.Counts
		}
	case callpath.Stopped:
		e.Kind, e.RetryReason = EventRetryRefused, retry.Reason(r.Reason)
	}
	return e
}

// observeRefusal tells the Observer of a refusal, by the stage that made it.
func (c *Callbacks) observeRefusal(ctx context.Context, cl *callpath.Call, r callpath.Refusal) {
	switch r.Control {
	case callpath.Open, callpath.Held:
		if c.obs != nil {
			c.observeShortCircuit(ctx, cl.Dependency, cl.Tool, cl.CallID, r.State, r.RetryAfter)
		}
	case callpath.Shed:
		if c.spans != nil {
			c.observeShed(ctx, cl.Dependency, cl.Tool, cl.CallID, r.Priority.String())
		}
	case callpath.Limited, callpath.Full:
		if c.obs != nil {
			c.observeBulkheadRejected(ctx, cl.Dependency, cl.Tool, cl.CallID)
		}
	}
}

// Settled reports a call that was sent: one outcome Event and record, and the
// Observer's call outcome.
func (s pathSink) Settled(ctx context.Context, cl *callpath.Call, st callpath.Settlement) {
	s.c.outcome(ctx, outcomeRecord{
		obsCtx: ctx, kind: EventCallOutcome, dep: cl.Dependency, tool: cl.Tool, callID: cl.CallID, invocation: cl.InvocationID,
		cls: st.Classification, breaker: cl.Breaker, elapsed: st.Elapsed, text: st.Text, sent: true, probe: st.Probe,
	})
}

// outcomeRecord is one settled call as outcome reports it.
type outcomeRecord struct {
	obsCtx                        context.Context // the call's own context, for the Observer's span
	kind                          EventKind
	dep, tool, callID, invocation string
	cls                           classify.Classification
	breaker                       *breaker.Breaker
	elapsed                       time.Duration
	text                          string // the dependency's own text of a failure, fingerprinted
	sent, probe                   bool
}

// outcome emits a settled call's Event and record, and tells the Observer when the
// call reached (or may have reached) its dependency.
func (c *Callbacks) outcome(ctx context.Context, o outcomeRecord) {
	level, msg := slog.LevelDebug, "agentbreaker: tool call finished"
	switch {
	case o.kind == EventOrphanReleased:
		level, msg = slog.LevelWarn, "agentbreaker: call released without its after-callback"
	case o.kind == EventMisordered:
		level, msg = slog.LevelWarn, "agentbreaker: a plugin registered before agentbreaker hid a tool error; register agentbreaker first"
	case o.cls.Verdict == classify.Counts:
		level, msg = slog.LevelInfo, "agentbreaker: tool call failed"
	}
	if c.onEvent == nil && !(o.sent && c.obs != nil) && !c.log.Enabled(ctx, level) {
		return // nobody reads the record: a healthy call with no hook, observer or debug log
	}
	cls := o.cls
	e := Event{Kind: o.kind, At: c.timeOf(c.nanos()), Dependency: o.dep, Tool: o.tool, CallID: o.callID, InvocationID: o.invocation,
		Outcome: cls.Outcome, Class: cls.Class, Verdict: cls.Verdict, BreakerState: o.breaker.State(),
		PolicyVersion: o.breaker.Policy().Version, Elapsed: o.elapsed, StatusCode: cls.StatusCode}
	if o.text != "" {
		e.Upstream = c.cfg.Guidance.Redaction.Redactor.Fingerprint(o.text)
		c.emit(ctx, e, level, msg, c.upstreamAttr(o.text))
	} else {
		c.emit(ctx, e, level, msg)
	}
	if o.sent && c.obs != nil {
		c.observeCall(o.obsCtx, o.dep, o.tool, o.callID, cls, o.elapsed, o.probe)
	}
}
