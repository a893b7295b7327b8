package otelmetrics

import (
	"context"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// BreakerEvent records a breaker state change: the transition, probe and cooldown
// counters and the time-open accounting, read at the next collection. Pass it to
// dependencymap.Config.OnStateChange (or breaker.Config.OnStateChange).
func (m *Metrics) BreakerEvent(e breaker.Event) {
	m.state().Heard(e) // so that a Wire of the same map does not count it again
	m.state().BreakerEvent(e)
}

// ShortCircuit counts a call its breaker answered without sending it
// (agentbreaker.short_circuits) and adds the decision to the span in ctx.
func (m *Metrics) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	m.state().ShortCircuit(ctx, s)
}

// CallOutcome counts and times one attempt that was sent (agentbreaker.calls,
// agentbreaker.call.duration) and adds it to the span in ctx.
func (m *Metrics) CallOutcome(ctx context.Context, c observe.Call) { m.state().CallOutcome(ctx, c) }

// BulkheadRejected counts a call refused by a full bulkhead and adds it to the span in
// ctx.
func (m *Metrics) BulkheadRejected(ctx context.Context, dependency string) {
	m.state().BulkheadRejected(ctx, dependency)
}

// WouldRefuse counts a call that control of a dependency in shadow mode would have
// refused (observe.Shadow); the call was sent.
func (m *Metrics) WouldRefuse(ctx context.Context, dependency, control string) {
	m.state().WouldRefuse(ctx, dependency, control)
}

// RetryBudgetExhausted counts a retry refused by a spent budget and adds it to the span
// in ctx. Give telemetry.RetryHook(m) to retry.Config.OnAttempt to feed it.
func (m *Metrics) RetryBudgetExhausted(ctx context.Context, dependency string) {
	m.state().RetryBudgetExhausted(ctx, dependency)
}

// Failover counts a model call moved to the next route and adds it to the span in ctx.
func (m *Metrics) Failover(ctx context.Context, f observe.Failover) { m.state().Failover(ctx, f) }

// RouteServing marks the model route serving calls now: its gauge reads 1 and the
// previous route's reads 0, at every collection from now on.
func (m *Metrics) RouteServing(model, region string) { m.state().RouteServing(model, region) }

// FallbackShare sets the share of recent turns served by a fallback route, reported
// at every collection. A value outside [0, 1] is logged and ignored.
func (m *Metrics) FallbackShare(share float64) { m.state().FallbackShare(share) }

// JournalPending sets how many journal intents await reconciliation and when the
// oldest was written; its age is computed at each collection. Feed it with
// telemetry.WatchJournal (its Observer is an observe.Journal). A negative count is
// logged and ignored.
func (m *Metrics) JournalPending(n int, oldest time.Time) { m.state().JournalPending(n, oldest) }

// ToolAbandoned reports a tool call its timeout wrapper stopped waiting for while the
// tool kept running, and that call's eventual return. Pass it as
// tooltimeout.Config.OnAbandon. Abandoning raises agentbreaker.tool_calls.abandoned by
// one, counts agentbreaker.tool.calls.abandoned and adds an "agentbreaker.abandoned"
// event to the call's span; the return lowers the gauge.
func (m *Metrics) ToolAbandoned(ctx context.Context, a tooltimeout.Abandon) {
	m.state().ToolAbandoned(ctx, a)
}

// Shed adds a call the dependency's throttle held back to the span in ctx (an
// "agentbreaker.shed" event). The shed counts are read from the throttles at
// collection time (WatchThrottles).
func (m *Metrics) Shed(ctx context.Context, s observe.Shed) { m.state().Shed(ctx, s) }

// TransitionDuring adds the dependency's latest breaker transition to the span in ctx,
// as an "agentbreaker.transition" event with the keys of the transition's log record.
func (m *Metrics) TransitionDuring(ctx context.Context, dependency string) {
	m.state().TransitionDuring(ctx, dependency)
}
