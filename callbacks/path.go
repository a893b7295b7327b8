package callbacks

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// pathSink is the call path's Sink: the Events, Observer calls and log records of a
// refused or settled call, the same for every hop (tools here, a remote agent's
// requests in a2aguard).
type pathSink struct{ c *Callbacks }

// Refused reports a call the path answered without sending: one short-circuit Event
// and record, the Observer's short-circuit, and the loop guard's count for the
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
	e := Event{Kind: EventShortCircuit, At: c.timeOf(c.nanos()), Dependency: cl.Dependency, Tool: cl.Tool, CallID: cl.CallID,
		InvocationID: cl.InvocationID, Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, Verdict: classify.Neutral,
		BreakerState: r.State, PolicyVersion: cl.Breaker.Policy().Version, ShortCircuits: told.Count}
	msg, firm := "agentbreaker: breaker open; call short-circuited",
		"agentbreaker: model keeps calling an unavailable tool; payload is now firm"
	var extra []slog.Attr
	if r.Control == callpath.Held {
		e.Class = r.Class
		msg, firm = "agentbreaker: the dependency asked for a delay; call answered locally until it passes",
			"agentbreaker: model keeps calling a tool whose dependency asked for a delay; payload is now firm"
		extra = []slog.Attr{slog.Duration("retry_after", r.RetryAfter)}
	}
	c.emit(ctx, e, slog.LevelInfo, msg, extra...)
	if c.obs != nil {
		c.observeShortCircuit(ctx, cl.Dependency, cl.Tool, cl.CallID, r.State, r.RetryAfter)
	}
	if firstFirm {
		e.Kind = EventLoopGuardFirm
		c.emit(ctx, e, slog.LevelWarn, firm)
	}
	return told
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
