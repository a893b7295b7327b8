package observe

import (
	"context"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// Call is one attempt at a guarded call that was sent (or tried to be sent) to its
// dependency. A call the breaker or the bulkhead answered itself is a [ShortCircuit],
// not a Call: report it once, as one or the other.
type Call struct {
	// Dependency is the dependency key (dependencymap), "model@region" for a model.
	Dependency string
	// Tool is the tool's name; empty for a model call.
	Tool string
	// RequestID identifies the request in logs (never in metric labels). Empty means the
	// observer reads the invocation ID from the context, when it is an adk-go context.
	RequestID string
	// Attempt counts attempts of the same logical call, starting at 1. Zero means 1.
	Attempt int
	// Outcome is the classified outcome of the attempt.
	Outcome classify.Outcome
	// Class is the classified error class; classify.ClassNone for a success.
	Class classify.Class
	// Elapsed is how long the attempt took.
	Elapsed time.Duration
	// Probe is true when the attempt was a half-open breaker's probe.
	Probe bool
}

// ShortCircuit is a call answered locally because its breaker did not admit it.
type ShortCircuit struct {
	// Dependency is the dependency key of the breaker that rejected the call.
	Dependency string
	// Tool is the tool's name; empty for a model call.
	Tool string
	// RequestID as in [Call].
	RequestID string
	// Attempt as in [Call].
	Attempt int
	// State is the breaker state that rejected the call (open, half_open, forced_open).
	State breaker.State
	// RetryAfter is how long until the breaker lets a probe through; zero if unknown.
	RetryAfter time.Duration
}

// Failover is a model call moved from one route to the next.
type Failover struct {
	// From and To are route keys, dependencymap.ModelKey(model, region).
	From, To string
	// Cause is a bounded reason: the error class that made the route fail
	// ("http_5xx", "http_429", "breaker_open", ...).
	Cause string
	// RequestID as in [Call].
	RequestID string
	// Attempt as in [Call].
	Attempt int
}

// Calls receives what the tool and model guards see for each call.
type Calls interface {
	// BreakerEvent receives a breaker's state change. It has the shape of a
	// breaker.Config.OnStateChange listener, so it can be passed as one.
	BreakerEvent(e breaker.Event)
	// ShortCircuit reports a call the breaker answered without sending it.
	ShortCircuit(ctx context.Context, s ShortCircuit)
	// CallOutcome reports one attempt that was sent, with its classified outcome.
	CallOutcome(ctx context.Context, c Call)
	// BulkheadRejected reports a call refused because the dependency's bulkhead was full.
	BulkheadRejected(ctx context.Context, dependency string)
	// RetryBudgetExhausted reports a retry refused because the dependency's retry
	// budget was spent.
	RetryBudgetExhausted(ctx context.Context, dependency string)
}

// Models receives what the model failover wrapper decides.
type Models interface {
	// Failover reports a model call moved to the next route.
	Failover(ctx context.Context, f Failover)
	// RouteServing reports the route that now serves model calls.
	RouteServing(model, region string)
	// FallbackShare reports the share, in [0, 1], of recent turns served by a route
	// other than the primary one.
	FallbackShare(share float64)
}

// Journal receives the state of the dispatch-intent journal.
type Journal interface {
	// JournalPending reports how many intents await reconciliation and when the oldest
	// of them was written (zero time when n is 0).
	JournalPending(n int, oldest time.Time)
}

// Observer is everything agentbreaker reports.
type Observer interface {
	Calls
	Models
	Journal
}

// Nop is an Observer that ignores everything. It is safe for concurrent use.
type Nop struct{}

var _ Observer = Nop{}

func (Nop) BreakerEvent(breaker.Event)                   {}
func (Nop) ShortCircuit(context.Context, ShortCircuit)   {}
func (Nop) CallOutcome(context.Context, Call)            {}
func (Nop) BulkheadRejected(context.Context, string)     {}
func (Nop) RetryBudgetExhausted(context.Context, string) {}
func (Nop) Failover(context.Context, Failover)           {}
func (Nop) RouteServing(string, string)                  {}
func (Nop) FallbackShare(float64)                        {}
func (Nop) JournalPending(int, time.Time)                {}

// Shed is a call the dependency's throttle held back while the dependency was partly
// overloaded: it was not sent, and the model got the shed payload.
type Shed struct {
	// Dependency is the dependency key of the throttle that shed the call.
	Dependency string
	// Tool is the tool's name.
	Tool string
	// Priority is the call's priority ("critical", "high", "normal", "low").
	Priority string
	// RequestID as in [Call].
	RequestID string
}

// Spans is implemented by observers that put breaker transitions and sheds on the
// span of the call they happened in. It is optional: the tool callbacks look for it on
// their Observer and call it only when it is there, so an Observer without it costs
// nothing more. Both agentbreaker observers (telemetry.Telemetry and
// otelmetrics.Metrics) implement it.
type Spans interface {
	// Shed reports a call the throttle held back, with the call's context.
	Shed(ctx context.Context, s Shed)
	// TransitionDuring reports that the dependency's breaker changed state while the
	// call in ctx was admitted (the cooldown was over: it became the half-open probe)
	// or reported its outcome (its report tripped or closed the breaker). The
	// transition itself arrived before, through BreakerEvent, which has no context.
	TransitionDuring(ctx context.Context, dependency string)
}

// Shadow is implemented by observers that count what a dependency in shadow mode
// (breaker.Policy.Shadow) would have refused. It is optional, as Spans is: the tool
// callbacks call it only when their Observer has it. Both agentbreaker observers
// implement it (agentbreaker_shadow_refusals_total).
type Shadow interface {
	// WouldRefuse reports a call that control (hold, breaker, throttle, limit,
	// bulkhead or retry) would have refused, and that was sent.
	WouldRefuse(ctx context.Context, dependency, control string)
}
