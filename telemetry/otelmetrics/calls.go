package otelmetrics

import (
	"context"
	"math"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

const other = bound.Other

func attempt(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// breakerInfo returns the current state and policy version of a dependency's breaker,
// or empty strings when no watched source knows it.
func (m *Metrics) breakerInfo(dependency string) (state, policyVersion string) {
	for _, src := range m.sourceList() {
		if b, ok := src.Get(dependency); ok && b != nil {
			return b.State().String(), b.Policy().Version
		}
	}
	return "", ""
}

// ShortCircuit counts a call its breaker answered without sending it
// (agentbreaker.short_circuits) and adds the decision to the span in ctx.
func (m *Metrics) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	if m == nil {
		return
	}
	dep, tool, state := m.dependency.Required(s.Dependency), m.tool.Value(s.Tool), s.State.String()
	if !m.admit(famShortCircuits, 1, dep, tool, state) {
		dep, tool = other, other
	}
	m.record(ctx, instShortCircuits, 1, [4]string{dep, tool, state})
	span.Annotate(ctx, span.Decision{
		Kind: span.DecisionShortCircuit, Dependency: s.Dependency, State: s.State.String(), Attempt: attempt(s.Attempt),
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, RetryAfter: s.RetryAfter,
	})
}

// CallOutcome counts and times one attempt that was sent (agentbreaker.calls,
// agentbreaker.call.duration) and adds it to the span in ctx.
func (m *Metrics) CallOutcome(ctx context.Context, c observe.Call) {
	if m == nil {
		return
	}
	dep := m.dependency.Required(c.Dependency)
	outcome := c.Outcome.String()
	class := string(c.Class)
	switch {
	case class == "":
		class = string(classify.ClassNone)
	default: // the library's classes pass the cap as they are (bound.ErrorClasses)
		class = m.errorClass.Value(class)
	}
	tool := m.tool.Value(c.Tool)
	if !m.admit(famCalls, 1, dep, tool, outcome, class) {
		m.record(ctx, instCalls, 1, [4]string{other, other, outcome, other})
	} else {
		m.record(ctx, instCalls, 1, [4]string{dep, tool, outcome, class})
	}
	if !m.admit(famDurations, m.histCost, dep, outcome) {
		dep = other
	}
	m.record(ctx, instCallDuration, c.Elapsed.Seconds(), [4]string{dep, outcome})
	kind := span.DecisionAttempt
	if c.Probe {
		kind = span.DecisionProbe
	}
	if !span.Recording(ctx) {
		return
	}
	state, version := m.breakerInfo(c.Dependency)
	span.Annotate(ctx, span.Decision{
		Kind: kind, Dependency: c.Dependency, State: state, PolicyVersion: version, Attempt: attempt(c.Attempt),
		Outcome: c.Outcome, Class: c.Class, Elapsed: c.Elapsed,
	})
}

// BulkheadRejected counts a call refused by a full bulkhead and adds it to the span in
// ctx.
func (m *Metrics) BulkheadRejected(ctx context.Context, dependency string) {
	if m == nil {
		return
	}
	m.record(ctx, instBulkhead, 1, [4]string{m.admitOne(famBulkhead, m.dependency.Required(dependency))})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionBulkheadRejected, Dependency: dependency,
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBulkheadFull})
}

// RetryBudgetExhausted counts a retry refused by a spent budget and adds it to the span
// in ctx. Give telemetry.RetryHook(m) to retry.Config.OnAttempt to feed it.
func (m *Metrics) RetryBudgetExhausted(ctx context.Context, dependency string) {
	if m == nil {
		return
	}
	m.record(ctx, instRetryBudget, 1, [4]string{m.admitOne(famBudget, m.dependency.Required(dependency))})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionRetryBudgetExhausted, Dependency: dependency})
}

// Failover counts a model call moved to the next route and adds it to the span in ctx.
func (m *Metrics) Failover(ctx context.Context, f observe.Failover) {
	if m == nil {
		return
	}
	m.countFailover(ctx, f.From, f.To, f.Cause)
	span.Annotate(ctx, span.Decision{Kind: span.DecisionFailover, Dependency: f.From, Attempt: attempt(f.Attempt), From: f.From, To: f.To, Cause: f.Cause})
}

func (m *Metrics) countFailover(ctx context.Context, from, to, cause string) {
	if cause == "" {
		cause = bound.Unknown
	}
	lf, lt, lc := m.route.Required(from), m.route.Required(to), m.cause.Value(cause)
	if !m.admit(famFailovers, 1, lf, lt, lc) {
		lf, lt, lc = other, other, other
	}
	m.record(ctx, instFailovers, 1, [4]string{lf, lt, lc})
}

// RouteServing marks the model route serving calls now: its gauge reads 1 and the
// previous route's reads 0, at every collection from now on.
func (m *Metrics) RouteServing(model, region string) {
	if m == nil {
		return
	}
	if model == "" {
		m.log.Warn("agentbreaker: RouteServing called with an empty model name; ignored", "region", region)
		return
	}
	md, r := m.model.Value(model), m.region.Value(region)
	if !m.admit(famRouteServing, 1, md, r) {
		md, r = other, other
	}
	m.mu.Lock()
	if m.servingIsSet && m.serving != [2]string{md, r} {
		m.routes[m.serving] = 0
	}
	m.routes[[2]string{md, r}] = 1
	m.serving, m.servingIsSet = [2]string{md, r}, true
	m.mu.Unlock()
}

// FallbackShare sets the share of recent turns served by a fallback route, reported
// at every collection. A value outside [0, 1] is logged and ignored.
func (m *Metrics) FallbackShare(share float64) {
	if m == nil {
		return
	}
	if math.IsNaN(share) || share < 0 || share > 1 {
		m.log.Warn("agentbreaker: FallbackShare outside [0, 1]; ignored", "share", share)
		return
	}
	m.mu.Lock()
	m.fallback, m.fallbackSet = share, true
	m.mu.Unlock()
}

// JournalPending sets how many journal intents await reconciliation and when the
// oldest was written; its age is computed at each collection. Feed it with
// telemetry.WatchJournal (its Observer is an observe.Journal). A negative count is
// logged and ignored.
func (m *Metrics) JournalPending(n int, oldest time.Time) {
	if m == nil {
		return
	}
	if n < 0 {
		m.log.Warn("agentbreaker: JournalPending with a negative count; ignored", "n", n)
		return
	}
	m.mu.Lock()
	m.journalN, m.journalOldest, m.journalSet = n, oldest, true
	m.mu.Unlock()
}

// ToolAbandoned reports a tool call its timeout wrapper stopped waiting for while the
// tool kept running, and that call's eventual return. Pass it as
// tooltimeout.Config.OnAbandon. Abandoning raises agentbreaker.tool_calls.abandoned by
// one, counts agentbreaker.tool.calls.abandoned and adds an "agentbreaker.abandoned"
// event to the call's span; the return lowers the gauge.
func (m *Metrics) ToolAbandoned(ctx context.Context, a tooltimeout.Abandon) {
	if m == nil {
		return
	}
	tool := m.tool.Required(a.Tool)
	if a.Returned {
		// Only the label the abandonment used: never a new series on the way out.
		if !m.budget.Known(bound.Key{Fam: uint8(famAbandoned), Labels: [4]string{tool}}) {
			tool = other
		}
		m.record(ctx, instAbandoned, -1, [4]string{tool})
		return
	}
	m.record(ctx, instAbandonedTotal, 1, [4]string{m.admitOne(famAbandonedTotal, tool)})
	m.record(ctx, instAbandoned, 1, [4]string{m.admitOne(famAbandoned, tool)})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionAbandoned, Dependency: a.Tool,
		Outcome: classify.Unknown, Class: classify.ClassTimeout, Elapsed: a.Limit})
}

// Shed adds a call the dependency's throttle held back to the span in ctx (an
// "agentbreaker.shed" event). The shed counts are read from the throttles at
// collection time (WatchThrottles).
func (m *Metrics) Shed(ctx context.Context, s observe.Shed) {
	if m == nil || !span.Recording(ctx) {
		return
	}
	state, version := m.breakerInfo(s.Dependency)
	span.Annotate(ctx, span.Decision{Kind: span.DecisionShed, Dependency: s.Dependency, Tool: s.Tool, Priority: s.Priority,
		State: state, PolicyVersion: version, Outcome: classify.FailedBeforeSend})
}

// TransitionDuring adds the dependency's latest breaker transition to the span in ctx,
// as an "agentbreaker.transition" event with the keys of the transition's log record.
func (m *Metrics) TransitionDuring(ctx context.Context, dependency string) {
	if m == nil || !span.Recording(ctx) {
		return
	}
	m.mu.Lock()
	var e breaker.Event
	if r := m.deps[m.dependency.Value(dependency)]; r != nil {
		e = r.last
	}
	m.mu.Unlock()
	if e.Breaker != "" {
		span.Annotate(ctx, span.Transition(e))
	}
}
