package callbacks

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// The observe* methods report to Config.Observability.Observer. Callers check c.obs != nil first, so
// without an Observer not even the report structs are built. Each recovers a panic in
// the Observer: like a panicking hook, a broken metrics adapter must not take down
// the tool call (adk-go does not recover panics in tool callbacks).

// observeShortCircuit reports a call an open breaker answered.
func (c *Callbacks) observeShortCircuit(ctx context.Context, dep, tool, callID string, state breaker.State, retryAfter time.Duration) {
	defer c.recoverObserver("ShortCircuit", dep, tool, callID)
	c.obs.ShortCircuit(ctx, observe.ShortCircuit{
		Dependency: dep, Tool: tool, RequestID: invocationOf(ctx), State: state, RetryAfter: retryAfter,
	})
}

// observeBulkheadRejected reports a call a full bulkhead refused.
func (c *Callbacks) observeBulkheadRejected(ctx context.Context, dep, tool, callID string) {
	defer c.recoverObserver("BulkheadRejected", dep, tool, callID)
	c.obs.BulkheadRejected(ctx, dep)
}

// observeCall reports the outcome of an admitted call that reached its tool.
func (c *Callbacks) observeCall(ctx context.Context, dep, tool, callID string, cls classify.Classification, elapsed time.Duration, probe bool) {
	defer c.recoverObserver("CallOutcome", dep, tool, callID)
	c.obs.CallOutcome(ctx, observe.Call{
		Dependency: dep, Tool: tool, RequestID: invocationOf(ctx),
		Outcome: cls.Outcome, Class: cls.Class, Elapsed: elapsed, Probe: probe,
	})
}

// spansOf returns obs when it also records transitions and sheds on spans.
func spansOf(obs observe.Calls) observe.Spans {
	s, _ := obs.(observe.Spans)
	return s
}

// observeTransition tells the Observer that the call in ctx moved its breaker.
func (c *Callbacks) observeTransition(ctx context.Context, dep, tool string) {
	defer c.recoverObserver("TransitionDuring", dep, tool, "")
	c.spans.TransitionDuring(ctx, dep)
}

// observeShed reports a call the throttle held back.
func (c *Callbacks) observeShed(ctx context.Context, dep, tool, callID, priority string) {
	defer c.recoverObserver("Shed", dep, tool, callID)
	c.spans.Shed(ctx, observe.Shed{Dependency: dep, Tool: tool, Priority: priority, RequestID: invocationOf(ctx)})
}

// invocationOf returns the adk-go invocation ID of ctx: the request_id of every record
// (the function call ID goes under function_call_id, from the same context), as the
// bulkhead and retry-budget records have it.
func invocationOf(ctx context.Context) string {
	if c, ok := ctx.(interface{ InvocationID() string }); ok {
		return c.InvocationID()
	}
	return ""
}

// recoverObserver is deferred by the observe* methods.
func (c *Callbacks) recoverObserver(method, dep, tool, callID string) {
	r := recover()
	if r == nil {
		return
	}
	c.panics.Add(1)
	c.log.Error("agentbreaker: Observer panicked; the call goes on",
		slog.String("method", method), slog.String("dependency", dep), slog.String("tool", tool),
		slog.String("function_call_id", callID), slog.Any("panic", r))
	if c.onEvent != nil {
		c.callHook(Event{Kind: EventCallbackPanic, At: c.timeOf(c.nanos()), Dependency: dep, Tool: tool, CallID: callID, Panic: r})
	}
}
