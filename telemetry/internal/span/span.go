package span

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// Kinds of breaker decision, the suffix of a span event's name ("agentbreaker.short_circuit").
const (
	DecisionShortCircuit         = "short_circuit"
	DecisionAttempt              = "attempt"
	DecisionProbe                = "probe"
	DecisionBulkheadRejected     = "bulkhead_rejected"
	DecisionRetryBudgetExhausted = "retry_budget_exhausted"
	DecisionFailover             = "failover"
	// DecisionAbandoned is a tool call its timeout wrapper stopped waiting for while
	// the tool kept running (tooltimeout.Abandon).
	DecisionAbandoned = "abandoned"
	// DecisionTransition is a breaker state change (breaker.Event) made while the call
	// whose span it lands on reported its outcome or was admitted.
	DecisionTransition = "transition"
	// DecisionShed is a call the dependency's throttle held back.
	DecisionShed = "shed"
)

// Span attribute keys. They live under "agentbreaker." so they never collide with
// adk-go's gen_ai.* and gcp.vertex.agent.* attributes on the same span.
const (
	AttrDecision      = attribute.Key("agentbreaker.decision")
	AttrDependency    = attribute.Key("agentbreaker.dependency")
	AttrBreakerState  = attribute.Key("agentbreaker.breaker_state")
	AttrPolicyVersion = attribute.Key("agentbreaker.policy_version")
	AttrAttempt       = attribute.Key("agentbreaker.attempt")
	AttrOutcome       = attribute.Key("agentbreaker.outcome")
	AttrErrorClass    = attribute.Key("agentbreaker.error_class")
	AttrRetryAfterMS  = attribute.Key("agentbreaker.retry_after_ms")
	AttrElapsedMS     = attribute.Key("agentbreaker.elapsed_ms")
	AttrFrom          = attribute.Key("agentbreaker.from")
	AttrTo            = attribute.Key("agentbreaker.to")
	AttrCause         = attribute.Key("agentbreaker.cause")
	AttrReason        = attribute.Key("agentbreaker.reason")
	AttrGeneration    = attribute.Key("agentbreaker.generation")
	AttrWindowCalls   = attribute.Key("agentbreaker.window_calls")
	AttrWindowFailed  = attribute.Key("agentbreaker.window_failed_calls")
	AttrHealthProbe   = attribute.Key("agentbreaker.health_probe")
	AttrTool          = attribute.Key("agentbreaker.tool")
	AttrPriority      = attribute.Key("agentbreaker.priority")
)

// Decision is one breaker decision to record on a span. Zero fields are left out.
type Decision struct {
	// Kind is one of the Decision constants. Required; a Decision without one is dropped.
	Kind string
	// Dependency is the dependency key.
	Dependency string
	// State is the breaker state the decision was made in ("open", "closed", ...).
	State string
	// PolicyVersion is the breaker policy's version.
	PolicyVersion string
	// Attempt counts attempts of the same call, from 1.
	Attempt int
	// Outcome and Class are the classified result, when there is one.
	Outcome classify.Outcome
	Class   classify.Class
	// RetryAfter is how long until the breaker admits calls again.
	RetryAfter time.Duration
	// Elapsed is how long the attempt took.
	Elapsed time.Duration
	// From, To and Cause describe a model failover or a breaker transition.
	From, To, Cause string
	// Reason, Generation, WindowCalls, WindowFailed and HealthProbe describe a breaker
	// transition, as its log record does.
	Reason                    string
	Generation                uint64
	WindowCalls, WindowFailed int64
	HealthProbe               bool
	// Tool and Priority describe a shed call.
	Tool, Priority string
}

// Annotate adds d to the span in ctx: as attributes, so the span shows the last
// decision made for its call, and as an event named "agentbreaker.<kind>", so every
// decision (each attempt, each failover) stays visible in order. In an adk-go tool
// callback the span is the tool's "execute_tool" span; inside a model.LLM it is the
// "generate_content" span. It does nothing when the span is not recording, so it is
// cheap without a tracer.
func Annotate(ctx context.Context, d Decision) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || d.Kind == "" {
		return
	}
	attrs := d.attributes()
	span.SetAttributes(attrs...)
	span.AddEvent("agentbreaker."+d.Kind, trace.WithAttributes(attrs...))
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (d Decision) attributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs, AttrDecision.String(d.Kind))
	str := func(k attribute.Key, v string) {
		if v != "" {
			attrs = append(attrs, k.String(v))
		}
	}
	str(AttrDependency, d.Dependency)
	str(AttrBreakerState, d.State)
	str(AttrPolicyVersion, d.PolicyVersion)
	if d.Attempt > 0 {
		attrs = append(attrs, AttrAttempt.Int(d.Attempt))
	}
	if d.Outcome != 0 {
		attrs = append(attrs, AttrOutcome.String(d.Outcome.String()))
	}
	str(AttrErrorClass, string(d.Class))
	if d.RetryAfter > 0 {
		attrs = append(attrs, AttrRetryAfterMS.Int64(d.RetryAfter.Milliseconds()))
	}
	if d.Elapsed > 0 {
		attrs = append(attrs, AttrElapsedMS.Float64(millis(d.Elapsed)))
	}
	str(AttrFrom, d.From)
	str(AttrTo, d.To)
	str(AttrCause, d.Cause)
	str(AttrReason, d.Reason)
	if d.Kind == DecisionTransition {
		attrs = append(attrs, AttrGeneration.Int64(int64(d.Generation)),
			AttrWindowCalls.Int64(d.WindowCalls), AttrWindowFailed.Int64(d.WindowFailed))
	}
	if d.HealthProbe {
		attrs = append(attrs, AttrHealthProbe.Bool(true))
	}
	str(AttrTool, d.Tool)
	str(AttrPriority, d.Priority)
	return attrs
}

// Transition is the decision recording a breaker state change: the keys of its log
// record (from, to, cause, reason, generation, window counts) under "agentbreaker.".
func Transition(e breaker.Event) Decision {
	return Decision{Kind: DecisionTransition, Dependency: e.Breaker, State: e.To.String(), PolicyVersion: e.PolicyVersion,
		From: e.From.String(), To: e.To.String(), Cause: e.Cause.String(), Reason: e.Reason, Generation: e.Generation,
		WindowCalls: e.Window.Calls, WindowFailed: e.Window.Failures, HealthProbe: e.HealthProbe}
}

// Recording reports whether the span in ctx records, so callers can skip building a
// Decision nobody keeps.
func Recording(ctx context.Context) bool {
	return ctx != nil && trace.SpanFromContext(ctx).IsRecording()
}
