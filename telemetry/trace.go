package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

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
	// From, To and Cause describe a model failover.
	From, To, Cause string
}

// AnnotateSpan adds d to the span in ctx: as attributes, so the span shows the last
// decision made for its call, and as an event named "agentbreaker.<kind>", so every
// decision (each attempt, each failover) stays visible in order. In an adk-go tool
// callback the span is the tool's "execute_tool" span; inside a model.LLM it is the
// "generate_content" span. It does nothing when the span is not recording, so it is
// cheap without a tracer.
func AnnotateSpan(ctx context.Context, d Decision) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || d.Kind == "" {
		return
	}
	attrs := d.attributes()
	span.SetAttributes(attrs...)
	span.AddEvent("agentbreaker."+d.Kind, trace.WithAttributes(attrs...))
}

func (d Decision) attributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 12)
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
	return attrs
}
