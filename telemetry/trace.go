package telemetry

import (
	"context"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
)

// Kinds of breaker decision, the suffix of a span event's name ("agentbreaker.short_circuit").
const (
	DecisionShortCircuit         = span.DecisionShortCircuit
	DecisionAttempt              = span.DecisionAttempt
	DecisionProbe                = span.DecisionProbe
	DecisionBulkheadRejected     = span.DecisionBulkheadRejected
	DecisionRetryBudgetExhausted = span.DecisionRetryBudgetExhausted
	DecisionFailover             = span.DecisionFailover
	// DecisionAbandoned is a tool call its timeout wrapper stopped waiting for while
	// the tool kept running (tooltimeout.Abandon).
	DecisionAbandoned = span.DecisionAbandoned
	// DecisionTransition is a breaker state change, on the span of the call that made
	// it (see Telemetry.BreakerTransitionOn).
	DecisionTransition = span.DecisionTransition
	// DecisionShed is a call the dependency's throttle held back (Telemetry.Shed).
	DecisionShed = span.DecisionShed
)

// Span attribute keys. They live under "agentbreaker." so they never collide with
// adk-go's gen_ai.* and gcp.vertex.agent.* attributes on the same span; after the
// prefix they are the Key constants of the log records.
const (
	AttrDecision      = span.AttrDecision
	AttrDependency    = span.AttrDependency
	AttrBreakerState  = span.AttrBreakerState
	AttrPolicyVersion = span.AttrPolicyVersion
	AttrAttempt       = span.AttrAttempt
	AttrOutcome       = span.AttrOutcome
	AttrErrorClass    = span.AttrErrorClass
	AttrRetryAfterMS  = span.AttrRetryAfterMS
	AttrElapsedMS     = span.AttrElapsedMS
	AttrFrom          = span.AttrFrom
	AttrTo            = span.AttrTo
	AttrCause         = span.AttrCause
	AttrReason        = span.AttrReason
	AttrGeneration    = span.AttrGeneration
	AttrWindowCalls   = span.AttrWindowCalls
	AttrWindowFailed  = span.AttrWindowFailed
	AttrHealthProbe   = span.AttrHealthProbe
	AttrTool          = span.AttrTool
	AttrPriority      = span.AttrPriority
)

// Decision is one breaker decision to record on a span. Zero fields are left out. It
// is the type the OpenTelemetry metrics adapter (telemetry/otelmetrics) records too.
type Decision = span.Decision

// AnnotateSpan adds d to the span in ctx: as attributes, so the span shows the last
// decision made for its call, and as an event named "agentbreaker.<kind>", so every
// decision (each attempt, each failover) stays visible in order. In an adk-go tool
// callback the span is the tool's "execute_tool" span; inside a model.LLM it is the
// "generate_content" span. It does nothing when the span is not recording, so it is
// cheap without a tracer.
func AnnotateSpan(ctx context.Context, d Decision) { span.Annotate(ctx, d) }
