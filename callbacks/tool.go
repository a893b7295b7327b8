package callbacks

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// reflectAndRetryType is the response_type of adk-go's retry-and-reflect plugin, which
// turns tool errors into "try again" results.
const reflectAndRetryType = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"

// notSent is the classification of a call that another plugin stopped after
// agentbreaker admitted it: the dependency never saw it.
var notSent = classify.Classification{Outcome: classify.FailedBeforeSend, Class: classify.ClassCanceled, Verdict: classify.Neutral}

// BeforeTool returns the before-tool callback for llmagent.Config.BeforeToolCallbacks.
// It must be the first of the agent's before-tool callbacks. Instrument and Build add
// it (and the other callbacks) for you.
func (c *Callbacks) BeforeTool() llmagent.BeforeToolCallback { return c.beforeTool(agentLayer) }

// AfterTool returns the after-tool callback for llmagent.Config.AfterToolCallbacks.
// It must be the first of the agent's after-tool callbacks.
func (c *Callbacks) AfterTool() llmagent.AfterToolCallback { return c.afterTool(agentLayer) }

// OnToolError returns the on-error callback for llmagent.Config.OnToolErrorCallbacks.
// It must be the first of the agent's on-error callbacks.
func (c *Callbacks) OnToolError() llmagent.OnToolErrorCallback { return c.onToolError(agentLayer) }

// DispatchMarker returns the before-tool callback that records that a call reached
// its tool. It must be the last of the agent's before-tool callbacks.
func (c *Callbacks) DispatchMarker() llmagent.BeforeToolCallback { return c.markDispatched }

func (c *Callbacks) beforeTool(l layer) llmagent.BeforeToolCallback {
	return func(ctx agent.Context, t tool.Tool, args map[string]any) (result map[string]any, err error) {
		a := entry{ctx: ctx, t: t, args: args}
		k := keyOf(ctx)
		added := false
		defer func() {
			if r := recover(); r != nil {
				result, err = nil, nil
				c.beforeToolPanicked(&a, k, l, added, r)
			}
		}()
		if !c.startAdmission(&a, k, l) {
			return nil, nil // not guarded: exempt, the plugin's, or with no breaker
		}
		for s := stageHold; s < stages; s++ {
			if p := c.admitStage(s, &a); p != nil && !a.cl.breaker.Shadow() {
				c.unwind(s, &a)
				return p, nil
			} // in shadow mode the refusal was recorded as what would have happened
		}
		cl := a.cl
		cl.owner, cl.ctx, cl.start = l, ctx, c.nanos()
		cl.tracked = l == agentLayer || c.cfg.SideEffects.TrackDispatch
		c.inFlight.Add(1)
		if added = a.inv.add(k, cl); !added {
			// The run's state was freed under us (the run ended): give everything back.
			c.settle(ctx, a.inv, cl, notSent, "", 0, false)
		}
		return nil, nil
	}
}

// startAdmission finds the call's invocation and breaker, and reports whether the
// stages guard it at all.
func (c *Callbacks) startAdmission(a *entry, k callKey, l layer) bool {
	if c.exempt(a.t) {
		return false
	}
	a.inv = c.invocation(a.ctx, true)
	if l == agentLayer && a.inv.owner(k) == pluginLayer {
		return false // the runner plugin already admitted this call
	}
	a.name = redact.RepairName(a.t.Name()) // a name that would break a metrics scrape or a log line
	b, err := c.deps.ForTool(a.name)
	if err != nil {
		// Too many on-demand breakers: let the call through unguarded, loudly.
		c.log.Warn("agentbreaker: no breaker for tool; the call goes on unguarded", slog.String("tool", a.name), slog.String("error", err.Error()))
		return false
	}
	if b == nil {
		return false // exempt in the dependency map
	}
	a.cl = &call{tool: a.name, dep: b.Name(), breaker: b}
	st, isAgentTool := a.t.(*scopedTool)
	if a.cl.transparent = isAgentTool && st.guards(a.cl.dep); !a.cl.transparent {
		noteInner(a.inv, a.cl.dep, nil) // the agent tools this call runs under reach dep
	}
	return true
}

// beforeToolPanicked recovers the before-tool callback: the call goes on unguarded,
// and a call already added to its invocation is given back.
func (c *Callbacks) beforeToolPanicked(a *entry, k callKey, l layer, added bool, r any) {
	if added {
		if cl := a.inv.take(k, l); cl != nil {
			c.settle(a.ctx, a.inv, cl, notSent, "", 0, false)
		}
	}
	c.panics.Add(1)
	c.log.Error("agentbreaker: before-tool callback panicked; the call goes on unguarded",
		slog.String("tool", a.t.Name()), slog.String("request_id", a.ctx.InvocationID()), slog.String("function_call_id", k.id), slog.Any("panic", r))
	if c.onEvent != nil {
		c.callHook(Event{Kind: EventCallbackPanic, At: c.timeOf(c.nanos()), Tool: a.t.Name(), CallID: k.id, Panic: r})
	}
}

// shortCircuit answers a call the path refused: an open breaker, or a delay the
// dependency stated that has not passed.
func (c *Callbacks) shortCircuit(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, r callpath.Refusal, args map[string]any) map[string]any {
	told := c.refuse(ctx, inv, tool, dep, b, r)
	in := c.payloadInfo(ctx, tool, dep, args)
	if told.Shadow {
		return payloads.Unavailable(in) // recorded; the call goes on, nothing else changes
	}
	in.RetryAfter = r.RetryAfter
	switch {
	case r.Control == callpath.Held:
		in.Class = r.Class
		_ = ctx.State().Set(c.guard.StateKey(dep), told.Count) // a mirror for visibility; the count lives in the tracker
	case r.State == breaker.ForcedOpen:
		// An operator took the dependency out of service: citing its last failure
		// would tell the model something that is not why it is refused.
		in.Class = classify.ClassBreakerOpen
	}
	// A tool the loop guard hid was not offered to the model: calling it anyway earns
	// the firm payload at once.
	in.Firm, in.ShortCircuits = told.Firm || inv.tracker.Hidden(dep), told.Count
	noteInner(inv, dep, &innerFailure{dep: dep, class: classify.ClassBreakerOpen})
	return payloads.Unavailable(in)
}

// busy answers a call refused by a full bulkhead.
func (c *Callbacks) busy(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, full error, args map[string]any, counts bool) map[string]any {
	fe, ok := errors.AsType[*bulkhead.FullError](full)
	told := c.refuse(ctx, inv, tool, dep, b, callpath.Refusal{Control: callpath.Full, State: b.State(), Counts: counts, Sustained: ok && fe.Sustained})
	in := c.payloadInfo(ctx, tool, dep, args)
	in.Class = classify.ClassBulkheadFull
	in.Firm, in.ShortCircuits = told.Firm, told.Count
	return payloads.Busy(in)
}

// refuse tells the call path of a tool call it refused, and returns what the sink
// made of it (the invocation's count, and whether the answer is firm).
func (c *Callbacks) refuse(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, r callpath.Refusal) callpath.Told {
	return c.path.Refuse(ctx, &callpath.Call{Dependency: dep, Tool: tool, CallID: ctx.FunctionCallID(), InvocationID: inv.id, Breaker: b}, r)
}

func (c *Callbacks) markDispatched(ctx agent.Context, _ tool.Tool, _ map[string]any) (map[string]any, error) {
	defer c.recoverPanic(ctx, "dispatch_marker")
	if inv := c.invocation(ctx, false); inv != nil {
		k := keyOf(ctx)
		inv.mu.Lock()
		if cl := inv.calls.get(k); cl != nil {
			cl.dispatched.Store(true)
		}
		inv.mu.Unlock()
	}
	return nil, nil
}

func (c *Callbacks) onToolError(l layer) llmagent.OnToolErrorCallback {
	return func(ctx agent.Context, t tool.Tool, args map[string]any, toolErr error) (result map[string]any, err error) {
		defer c.recoverPanic(ctx, "on_tool_error")
		inv := c.invocation(ctx, false)
		k := keyOf(ctx)
		var cl *call
		if inv != nil {
			inv.mu.Lock()
			if cl = inv.calls.get(k); cl != nil && cl.owner != l {
				cl = nil
			}
			inv.mu.Unlock()
		}
		if cl == nil {
			return c.unadmittedError(ctx, inv, l, t, toolErr), nil
		}
		var cls classify.Classification
		sent := false
		switch {
		case cl.tracked && !cl.dispatched.Load():
			cls = notSent // a callback after ours refused the call with an error
		case errors.Is(toolErr, tool.ErrConfirmationRequired), errors.Is(toolErr, tool.ErrConfirmationRejected):
			cls = notSent // waiting for, or refused by, a person: the dependency was not called
		case c.schemas.argsRejected(t, args):
			cls = rejectedArgs // functiontool refused the model's arguments before its handler ran
		default:
			cls = c.classifyError(ctx, cl.dep, toolErr)
			sent = true
		}
		inv.mu.Lock()
		cl.errSeen, cl.errSent, cl.errCls, cl.errText, cl.err = true, sent, cls, toolErr.Error(), toolErr
		inv.mu.Unlock()
		if c.mutating[cl.tool] && cls.Outcome == classify.Unknown && cls.Verdict == classify.Counts {
			in := payloads.Info{Dependency: cl.dep, Tool: cl.tool, Class: cls.Class}
			return payloads.OutcomeUnknown(in), nil
		}
		return nil, nil
	}
}

// unadmittedError handles an error for a call agentbreaker did not admit. The common
// case is a tool name the model invented: adk-go sends it only to on-error callbacks.
// It is the model's mistake, so no breaker is consulted or created; a name whose
// dependency the loop guard hid gets the firm payload instead of "not found".
func (c *Callbacks) unadmittedError(ctx agent.Context, inv *invocation, l layer, t tool.Tool, toolErr error) map[string]any {
	if l == agentLayer && inv != nil && inv.owner(keyOf(ctx)) == pluginLayer {
		return nil
	}
	name := t.Name()
	if t.Description() != "Tool not found" { // adk-go's stand-in for unknown tools
		return nil // exempt, or refused before agentbreaker saw it
	}
	if inv != nil {
		if dep, ok := c.deps.DependencyOf(name); ok && inv.tracker.Hidden(dep) {
			d := inv.tracker.ShortCircuit(dep)
			in := payloads.Info{Dependency: dep, Tool: name, Firm: true, ShortCircuits: d.Count, Alternatives: c.alternatives(name)}
			if class, ok := c.path.Failed(dep); ok {
				in.Class = class
			}
			e := Event{Kind: EventShortCircuit, At: c.timeOf(c.nanos()), Dependency: dep, Tool: name, CallID: ctx.FunctionCallID(),
				InvocationID: inv.id, Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, Verdict: classify.Neutral,
				ShortCircuits: d.Count}
			if b, ok := c.deps.Get(dep); ok {
				in.RetryAfter = b.RetryAfter()
				e.BreakerState, e.PolicyVersion = b.State(), b.Policy().Version
			}
			c.emit(ctx, e, slog.LevelInfo, "agentbreaker: model called a tool hidden because its dependency is open; call short-circuited")
			if c.obs != nil {
				c.observeShortCircuit(ctx, dep, name, e.CallID, e.BreakerState, in.RetryAfter)
			}
			return payloads.Unavailable(in)
		}
	}
	id := ""
	if inv != nil {
		if inv.seenUnknown(keyOf(ctx)) {
			return nil // the other layer reported it
		}
		id = inv.id
	}
	c.emit(ctx, Event{Kind: EventUnknownTool, At: c.timeOf(c.nanos()), CallID: ctx.FunctionCallID(), InvocationID: id},
		slog.LevelInfo, "agentbreaker: model called a tool that does not exist", slog.String("called_name", redact.Clean(name, redact.MaxNameLen)), c.upstreamAttr(toolErr.Error()))
	return nil
}

func (c *Callbacks) afterTool(l layer) llmagent.AfterToolCallback {
	return func(ctx agent.Context, t tool.Tool, args, result map[string]any, toolErr error) (map[string]any, error) {
		defer c.recoverPanic(ctx, "after_tool")
		inv := c.invocation(ctx, false)
		if inv == nil {
			return nil, nil
		}
		cl := inv.take(keyOf(ctx), l)
		if cl == nil {
			return nil, nil // not ours: exempt, short-circuited, or the other layer's
		}
		inv.mu.Lock()
		errSeen, sent, cls, text := cl.errSeen, cl.errSent, cl.errCls, cl.errText
		inner := cl.inner
		inv.mu.Unlock()
		kind := EventCallOutcome
		switch {
		case errSeen:
			// Recorded by our on-error callback, before any later plugin could turn the
			// error into a result.
		case cl.tracked && !cl.dispatched.Load():
			cls = notSent // a callback after ours answered instead of the tool
		case toolErr != nil:
			cls = c.classifyError(ctx, cl.dep, toolErr)
			text, sent = toolErr.Error(), true
			inv.mu.Lock()
			cl.err = toolErr
			inv.mu.Unlock()
		case payloads.Is(result):
			cls = classify.ToolResult(result) // someone's agentbreaker payload: never a call
		case isReflectAndRetry(result):
			// A plugin ahead of ours answered the tool's error: the failure is hidden.
			c.misorders.Add(1)
			cls = classify.Classification{Outcome: classify.Unknown, Class: classify.ClassUnclassified, Verdict: classify.Neutral}
			kind, sent = EventMisordered, true // the tool ran and failed; only the outcome is lost
		default:
			cls = c.classifier(cl.dep).Classify(classify.Input{Context: ctx, Result: result})
			if cls.Outcome != classify.Succeeded {
				text = inBandText(result) // refusals too: the operator gets their fingerprint
			}
			sent = true
		}
		if cls.Outcome == classify.Succeeded && c.cfg.Guidance.Cache != nil && inner == nil {
			c.cfg.Guidance.Cache.Put(cl.tool, args, result)
		}
		settled := cls
		if inner != nil && cls.Outcome == classify.Succeeded {
			// A sub-agent that answered in words although its own calls failed: the
			// call failed, and the model's re-issue of it is a retry (hops.go). Its
			// words, built from agentbreaker's payloads, still reach the model.
			settled = innerClassification(inner)
		}
		c.settle(ctx, inv, cl, settled, text, kind, sent)
		in := boundaryInput{cl: cl, args: args, cls: cls, sent: sent, result: result, toolErr: toolErr}
		if errSeen {
			in.errText = text
		}
		return c.answer(ctx, in), nil
	}
}

// classifyError classifies a tool's error. An error from an httptransport round trip
// carries the transport's own classification, which knows more than the error text or
// type can say: whether anything was written to a connection before the failure. A
// timeout while waiting for a pooled connection is FAILED_BEFORE_SEND there (provably
// never sent, safe to repeat), while the bare error reads as a timeout with an UNKNOWN
// outcome. The transport's word wins; the dependency's classifier decides the rest.
func (c *Callbacks) classifyError(ctx context.Context, dep string, err error) classify.Classification {
	if cls, ok := httptransport.ClassificationOf(nil, err); ok && cls.Outcome != 0 {
		return cls
	}
	return c.classifier(dep).Classify(classify.Input{Context: ctx, Err: err})
}

func isReflectAndRetry(result map[string]any) bool {
	rt, _ := result["response_type"].(string)
	return rt == reflectAndRetryType
}

// inBandText picks the failure text of an in-band error result, for the operator's
// fingerprint (and the opt-in excerpt).
func inBandText(result map[string]any) string { return classify.FailureText(result) }

// settle runs the stages' settlement for a call, in reverse order of admission: the
// retry attempt, the bulkhead slot, the adaptive limit, the throttle, the breaker, and
// what the outcome says of the dependency (a stated delay, the refusals' class); then
// it tells the hook, the log and, when sent says the call reached (or may have
// reached) its tool, the Observer. The caller has removed cl from its invocation,
// which makes this the one release of the call. kind 0 reports nothing.
func (c *Callbacks) settle(ctx context.Context, inv *invocation, cl *call, cls classify.Classification, text string, kind EventKind, sent bool) {
	probe := cl.permit.IsProbe() // read before Report, which spends the permit
	if cl.attempt != nil {
		c.finishAttempt(ctx, inv, cl, cls, sent)
	}
	if cl.bulk != nil {
		cl.bulk.Release()
	}
	c.endLimit(cl, cls, sent)
	spared := c.settleThrottle(inv, cl, cls, sent, probe)
	c.settleBreaker(inv, cl, cls, sent, spared)
	c.path.Note(cl.dep, cl.breaker, cls)
	c.inFlight.Add(-1)
	if cls.ConfigFault {
		c.noteConfigFault(ctx, inv, cl, cls)
	}
	if kind == 0 {
		return
	}
	// The call's own tool context, even when settled from the end of the run: it
	// carries the call's IDs and its execute_tool span.
	c.outcome(ctx, outcomeRecord{
		obsCtx: cl.ctx, kind: kind, dep: cl.dep, tool: cl.tool, callID: cl.ctx.FunctionCallID(), invocation: inv.id, cls: cls,
		breaker: cl.breaker, elapsed: time.Duration(max(c.nanos()-cl.start, 0)), text: text, sent: sent, probe: probe,
	})
}

// settleThrottle reports a sent call to its dependency's throttle, and says whether
// the breaker is spared its failure: while the dependency still handles part of its
// load, an overload answer (429, 503, 408) is the throttle's to act on, not evidence of
// an outage. Once its window holds no accepted call, overload answers count again and
// the breaker opens as it would without a throttle. A stated delay still reaches it.
func (c *Callbacks) settleThrottle(inv *invocation, cl *call, cls classify.Classification, sent, probe bool) bool {
	if cl.throttle == nil || !sent {
		return false
	}
	if accepted, counted := throttle.Judge(cls); counted {
		cl.throttle.Report(accepted)
		if accepted && inv != nil {
			inv.markServed(cl.dep)
		}
	}
	return !probe && cls.Verdict == classify.Counts && throttle.Overloaded(cls) && cl.throttle.Accepting()
}

// settleBreaker reports the call to its breaker: nothing for a transparent agent
// tool's call (its inner calls have reported), nothing for a failure the throttle
// spared. A counted failure that was sent marks the agent tools the call ran under.
func (c *Callbacks) settleBreaker(inv *invocation, cl *call, cls classify.Classification, sent, spared bool) {
	r := cls.BreakerReport()
	switch {
	case cl.transparent:
		r = breaker.Report{Verdict: breaker.Ignore}
	case spared:
		r.Verdict = breaker.Ignore
	}
	if !cl.transparent && sent && cls.Verdict == classify.Counts {
		noteInner(inv, cl.dep, &innerFailure{dep: cl.dep, class: cls.Class, retryable: cls.Retryable})
	}
	var before breaker.State
	if c.spans != nil {
		before = cl.breaker.State()
	}
	cl.permit.Report(r)
	if c.spans != nil && cl.breaker.State() != before {
		// This report moved the breaker (it tripped, or a probe settled): the
		// transition belongs on this call's execute_tool span.
		c.observeTransition(cl.ctx, cl.dep, cl.tool)
	}
}
