package callbacks

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// EventKind says what happened. Its String form is a bounded label for metrics.
type EventKind uint8

const (
	// EventCallOutcome: a guarded call finished and its outcome was reported to the
	// breaker.
	EventCallOutcome EventKind = iota + 1
	// EventShortCircuit: an open breaker answered a call with the unavailable payload,
	// or agentbreaker did while a delay the dependency asked for (Retry-After) had not
	// passed; Class is then the class of the answer that asked for it.
	EventShortCircuit
	// EventBulkheadRejected: a full bulkhead answered a call with the busy payload. The
	// breaker counted a failure (Verdict Counts) when slow calls held the bulkhead (see
	// Config.Bulkheads.SlowCall), and nothing (Verdict Neutral) when quick calls did.
	// The same kind, always Neutral and with the call's Priority, answers a call over
	// its dependency's adaptive concurrency limit (dependencymap.Dependency.Adaptive).
	EventBulkheadRejected
	// EventBulkheadSaturated: bulkhead rejections became sustained while the
	// dependency's breaker was still closed, which deserves an alert of its own.
	EventBulkheadSaturated
	// EventLoopGuardFirm: a dependency's payloads turned firm in an invocation (once
	// per invocation and dependency).
	EventLoopGuardFirm
	// EventModelCallCapped: the loop guard's cap on model calls ended a turn.
	EventModelCallCapped
	// EventToolsHidden: tools of open dependencies were removed from a model request.
	EventToolsHidden
	// EventUnknownTool: the model called a tool that does not exist. It is the model's
	// mistake: no breaker is involved, none is created.
	EventUnknownTool
	// EventOrphanReleased: a call admitted by the before-callback never reached the
	// after-callback (another plugin's after-callback answered first, or the run was
	// cut short); its permit and slot were released when the run's state was freed.
	EventOrphanReleased
	// EventMisordered: a plugin registered before agentbreaker turned a tool error
	// into a result, so the failure could not be measured. Register agentbreaker first.
	EventMisordered
	// EventCallbackPanic: one of agentbreaker's callbacks, or a user hook it called,
	// panicked; the panic was recovered and the call went on unguarded.
	EventCallbackPanic
	// EventRetryRefused: Config.SideEffects.Retry refused the next attempt of a call's logical
	// operation (the model repeated a call whose attempts, deadline or retry budget
	// were spent, whose outcome is UNKNOWN, or that is still running); the call was
	// answered with a payload and its tool did not run. RetryReason says why.
	EventRetryRefused
	// EventQueued: an open breaker refused a call of a tool in Config.SideEffects.QueueTools, and
	// Config.SideEffects.Admission queued it; the model was told when it expires.
	EventQueued
	// EventShed: the dependency's throttle held a call back while the dependency is
	// partly overloaded (its breaker closed); the model got the shed payload. Priority
	// is the call's priority.
	EventShed
	// EventConfigFault: a call failed because of this program's own configuration (a
	// classification with ConfigFault set: a request net/http refused to send, such as
	// a URL with no scheme or host; credentials the dependency rejects; a certificate
	// it does not trust). It does not count against the breaker. Emitted once per
	// dependency and class, with a WARN record naming the cause; every call still has
	// its EventCallOutcome.
	EventConfigFault
	// EventWouldRefuse: a control of a dependency in shadow mode
	// (breaker.Policy.Shadow) would have refused the call, and the call was sent.
	// WouldRefuse names the control; Kind of what the model would have been told is
	// in the record's would_tell key; Class, BreakerState and RetryAfter are the
	// refusal's.
	EventWouldRefuse
)

var kindNames = [...]string{
	EventCallOutcome:       "call_outcome",
	EventShortCircuit:      "short_circuit",
	EventBulkheadRejected:  "bulkhead_rejected",
	EventBulkheadSaturated: "bulkhead_saturated",
	EventLoopGuardFirm:     "loop_guard_firm",
	EventModelCallCapped:   "model_call_capped",
	EventToolsHidden:       "tools_hidden",
	EventUnknownTool:       "unknown_tool",
	EventOrphanReleased:    "orphan_released",
	EventMisordered:        "misordered",
	EventCallbackPanic:     "callback_panic",
	EventRetryRefused:      "retry_refused",
	EventQueued:            "queued",
	EventShed:              "shed",
	EventConfigFault:       "config_fault",
	EventWouldRefuse:       "would_refuse",
}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// EventKinds returns every kind, for telemetry that creates its series up front.
func EventKinds() []EventKind {
	out := make([]EventKind, 0, len(kindNames)-1)
	for k := EventCallOutcome; int(k) < len(kindNames); k++ {
		out = append(out, k)
	}
	return out
}

// Event is one thing the callbacks did. Dependency, Tool, Kind, Outcome, Class and
// BreakerState are bounded and fit metric labels (Tool is bounded by the tools you
// declared: calls to invented tool names carry no Tool); CallID and InvocationID are
// not, and belong in logs and traces only.
type Event struct {
	Kind         EventKind
	At           time.Time
	Dependency   string
	Tool         string
	CallID       string
	InvocationID string
	// Outcome, Class and Verdict classify the call (call outcomes, short-circuits,
	// rejections).
	Outcome classify.Outcome
	Class   classify.Class
	Verdict classify.Verdict
	// BreakerState is the dependency's breaker state when the event happened.
	BreakerState  breaker.State
	PolicyVersion string
	// Elapsed is how long the call took, for call outcomes.
	Elapsed time.Duration
	// ShortCircuits is the invocation's count for the dependency, for short-circuits,
	// rejections and firm events.
	ShortCircuits int
	// Tools lists the tools hidden, for EventToolsHidden.
	Tools []string
	// Panic is the recovered value, for EventCallbackPanic.
	Panic any
	// RetryReason is why the retry orchestrator refused the call, for
	// EventRetryRefused (a bounded label).
	RetryReason retry.Reason
	// StatusCode is the HTTP or API status of a failed call when one is known, else 0.
	StatusCode int
	// Priority is the call's priority, for EventShed and for an EventBulkheadRejected
	// that the adaptive concurrency limit (dependencymap.Dependency.Adaptive) caused.
	Priority throttle.Priority
	// Upstream fingerprints the failed call's own text (its error message or in-band
	// error): length and a short hash, never the text (see package redact).
	Upstream redact.Fingerprint
	// WouldRefuse names the control that would have refused the call, for
	// EventWouldRefuse: hold, breaker, throttle, limit, bulkhead or retry.
	WouldRefuse string
}

// emit delivers an event to the hook and the log. It is called with no lock held.
func (c *Callbacks) emit(ctx context.Context, e Event, level slog.Level, msg string, extra ...slog.Attr) {
	if c.onEvent != nil {
		c.callHook(e)
	}
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12+len(extra))
	attrs = append(attrs, slog.String("event", e.Kind.String()))
	if e.Dependency != "" {
		attrs = append(attrs, slog.String("dependency", e.Dependency))
	}
	if e.Tool != "" {
		attrs = append(attrs, slog.String("tool", e.Tool))
	}
	// request_id is the invocation, as in every other record of the library; the
	// model's function call ID is function_call_id.
	if e.InvocationID != "" {
		attrs = append(attrs, slog.String("request_id", e.InvocationID))
	}
	if e.CallID != "" {
		attrs = append(attrs, slog.String("function_call_id", e.CallID))
	}
	if e.Outcome != 0 {
		attrs = append(attrs, slog.String("outcome", e.Outcome.String()))
	}
	if e.Class != "" {
		attrs = append(attrs, slog.String("error_class", string(e.Class)))
	}
	if e.Verdict != 0 {
		attrs = append(attrs, slog.String("verdict", e.Verdict.String()))
	}
	if e.Dependency != "" {
		attrs = append(attrs, slog.String("breaker_state", e.BreakerState.String()),
			slog.String("policy_version", e.PolicyVersion))
	}
	if e.Kind == EventCallOutcome {
		attrs = append(attrs, slog.Float64("elapsed_ms", float64(e.Elapsed)/float64(time.Millisecond)))
	}
	if e.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status_code", e.StatusCode))
	}
	if e.ShortCircuits > 0 {
		attrs = append(attrs, slog.Int("short_circuits", e.ShortCircuits))
	}
	if len(e.Tools) > 0 {
		attrs = append(attrs, slog.Any("tools", e.Tools))
	}
	attrs = append(attrs, extra...)
	c.log.LogAttrs(ctx, level, msg, attrs...)
}

// callHook runs the user's hook, recovering a panic so a broken listener cannot take
// down a tool call.
func (c *Callbacks) callHook(e Event) {
	defer func() {
		if r := recover(); r != nil {
			c.panics.Add(1)
			c.log.Error("agentbreaker: OnEvent hook panicked", slog.String("event", e.Kind.String()), slog.Any("panic", r))
		}
	}()
	c.onEvent(e)
}
