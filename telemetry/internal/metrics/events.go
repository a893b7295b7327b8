package metrics

import (
	"context"
	"math"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Attempt is n, or 1 for an attempt number left at zero.
func Attempt(n int) int { return max(n, 1) }

// ShortCircuit counts a call its breaker answered without sending it and adds the
// decision to the span in ctx.
func (s *State) ShortCircuit(ctx context.Context, sc observe.ShortCircuit) {
	if s == nil {
		return
	}
	dep, tool, state := s.dependency.Required(sc.Dependency), s.tool.Value(sc.Tool), sc.State.String()
	if !s.admit(famShortCircuits, 1, dep, tool, state) {
		dep, tool = Other, Other
	}
	s.rec.Record(ctx, ShortCircuits, 1, [4]string{dep, tool, state})
	span.Annotate(ctx, span.Decision{
		Kind: span.DecisionShortCircuit, Dependency: sc.Dependency, State: sc.State.String(), Attempt: Attempt(sc.Attempt),
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, RetryAfter: sc.RetryAfter,
	})
}

// CallOutcome counts and times one attempt that was sent and adds it to the span in
// ctx.
func (s *State) CallOutcome(ctx context.Context, c observe.Call) {
	if s == nil {
		return
	}
	dep := s.dependency.Required(c.Dependency)
	outcome := c.Outcome.String()
	class := string(c.Class)
	switch {
	case class == "":
		class = string(classify.ClassNone)
	default: // the library's classes pass the cap as they are (bound.ErrorClasses)
		class = s.errorClass.Value(class)
	}
	tool := s.tool.Value(c.Tool)
	if !s.admit(famCalls, 1, dep, tool, outcome, class) {
		s.rec.Record(ctx, Calls, 1, [4]string{Other, Other, outcome, Other})
	} else {
		s.rec.Record(ctx, Calls, 1, [4]string{dep, tool, outcome, class})
	}
	if !s.admit(famDurations, s.histCost, dep, outcome) {
		dep = Other
	}
	s.rec.Record(ctx, CallDuration, c.Elapsed.Seconds(), [4]string{dep, outcome})
	if !span.Recording(ctx) {
		return
	}
	kind := span.DecisionAttempt
	if c.Probe {
		kind = span.DecisionProbe
	}
	state, version := s.BreakerInfo(c.Dependency)
	span.Annotate(ctx, span.Decision{
		Kind: kind, Dependency: c.Dependency, State: state, PolicyVersion: version, Attempt: Attempt(c.Attempt),
		Outcome: c.Outcome, Class: c.Class, Elapsed: c.Elapsed,
	})
}

// BulkheadRejected counts a call refused by a full bulkhead and adds it to the span in
// ctx.
func (s *State) BulkheadRejected(ctx context.Context, dependency string) {
	if s == nil {
		return
	}
	s.rec.Record(ctx, Bulkhead, 1, [4]string{s.admitOne(famBulkhead, s.dependency.Required(dependency))})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionBulkheadRejected, Dependency: dependency,
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBulkheadFull})
}

// shadowControls are the values of agentbreaker_shadow_refusals_total's control label.
var shadowControls = [...]string{"hold", "breaker", "throttle", "limit", "bulkhead", "retry"}

// WouldRefuse counts a call that control of a dependency in shadow mode would have
// refused; the call was sent.
func (s *State) WouldRefuse(ctx context.Context, dependency, control string) {
	if s == nil {
		return
	}
	known := false
	for _, c := range shadowControls {
		known = known || c == control
	}
	if !known {
		control = Other
	}
	dep := s.dependency.Required(dependency)
	if !s.admit(famShadow, 1, dep, control) {
		dep = Other
	}
	s.rec.Record(ctx, ShadowRefusals, 1, [4]string{dep, control})
}

// RetryBudgetExhausted counts a retry refused by a spent budget and adds it to the span
// in ctx.
func (s *State) RetryBudgetExhausted(ctx context.Context, dependency string) {
	if s == nil {
		return
	}
	s.rec.Record(ctx, RetryBudget, 1, [4]string{s.admitOne(famBudget, s.dependency.Required(dependency))})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionRetryBudgetExhausted, Dependency: dependency})
}

// Failover counts a model call moved to the next route and adds it to the span in ctx.
func (s *State) Failover(ctx context.Context, f observe.Failover) {
	if s == nil {
		return
	}
	s.countRoute(ctx, Failovers, f.From, f.To, f.Cause)
	span.Annotate(ctx, span.Decision{Kind: span.DecisionFailover, Dependency: f.From, Attempt: Attempt(f.Attempt), From: f.From, To: f.To, Cause: f.Cause})
}

// countRoute counts one failover or fallback call. Fallback calls have no family of
// their own in the budget: their series are charged to the failovers' under a key of
// their own.
func (s *State) countRoute(ctx context.Context, id ID, from, to, cause string) {
	if cause == "" {
		cause = bound.Unknown
	}
	lf, lt, lc := s.route.Required(from), s.route.Required(to), s.cause.Value(cause)
	key := ""
	if id != Failovers {
		key = Rows[id].Prom
	}
	if !s.admit(famFailovers, 1, lf, lt, lc, key) {
		lf, lt, lc = Other, Other, Other
	}
	s.rec.Record(ctx, id, 1, [4]string{lf, lt, lc})
}

// RouteServing marks the model route serving calls now: its gauge reads 1 and the
// previous route's reads 0. It reports whether the serving route changed; an empty
// model is logged and ignored.
func (s *State) RouteServing(model, region string) (changed bool) {
	if s == nil {
		return false
	}
	if model == "" {
		s.log.Warn("agentbreaker: RouteServing called with an empty model name; ignored", "region", region)
		return false
	}
	md, r := s.model.Value(model), s.region.Value(region)
	if !s.admit(famRouteServing, 1, md, r) {
		md, r = Other, Other
	}
	now := [2]string{md, r}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = !s.servingIsSet || s.serving != now
	if s.servingIsSet && changed {
		s.routes[s.serving] = 0
	}
	s.routes[now] = 1
	s.serving, s.servingIsSet = now, true
	return changed
}

// FallbackShare sets the share of recent turns served by a fallback route. A value
// outside [0, 1] is logged and ignored.
func (s *State) FallbackShare(share float64) {
	if s == nil {
		return
	}
	if math.IsNaN(share) || share < 0 || share > 1 {
		s.log.Warn("agentbreaker: FallbackShare outside [0, 1]; ignored", "share", share)
		return
	}
	s.mu.Lock()
	s.fallback, s.fallbackSet = share, true
	s.mu.Unlock()
}

// JournalPending sets how many journal intents await reconciliation and when the
// oldest was written. A negative count is logged and ignored.
func (s *State) JournalPending(n int, oldest time.Time) {
	if s == nil {
		return
	}
	if n < 0 {
		s.log.Warn("agentbreaker: JournalPending with a negative count; ignored", "n", n)
		return
	}
	s.mu.Lock()
	s.journalN, s.journalOldest, s.journalSet = n, oldest, true
	s.mu.Unlock()
}

// ToolAbandoned counts a tool call its timeout wrapper abandoned (the gauge up, the
// counter, a span event) or that call's return (the gauge down, under the label the
// abandonment used: never a new series on the way out).
func (s *State) ToolAbandoned(ctx context.Context, a tooltimeout.Abandon) {
	if s == nil {
		return
	}
	tool := s.tool.Required(a.Tool)
	if a.Returned {
		if !s.budget.Known(bound.Key{Fam: uint8(famAbandoned), Labels: [4]string{tool}}) {
			tool = Other
		}
		s.rec.Record(ctx, Abandoned, -1, [4]string{tool})
		return
	}
	s.rec.Record(ctx, AbandonedTotal, 1, [4]string{s.admitOne(famAbandonedTotal, tool)})
	s.rec.Record(ctx, Abandoned, 1, [4]string{s.admitOne(famAbandoned, tool)})
	span.Annotate(ctx, span.Decision{Kind: span.DecisionAbandoned, Dependency: a.Tool,
		Outcome: classify.Unknown, Class: classify.ClassTimeout, Elapsed: a.Limit})
}

// Shed adds a call the dependency's throttle held back to the span in ctx. The shed
// counts are read from the throttles at collection time.
func (s *State) Shed(ctx context.Context, sh observe.Shed) {
	if s == nil {
		return
	}
	if !span.Recording(ctx) {
		return
	}
	state, version := s.BreakerInfo(sh.Dependency)
	span.Annotate(ctx, span.Decision{Kind: span.DecisionShed, Dependency: sh.Dependency, Tool: sh.Tool, Priority: sh.Priority,
		State: state, PolicyVersion: version, Outcome: classify.FailedBeforeSend})
}

// TransitionDuring adds the dependency's latest breaker transition to the span in ctx.
func (s *State) TransitionDuring(ctx context.Context, dependency string) {
	if s == nil {
		return
	}
	if !span.Recording(ctx) {
		return
	}
	if e := s.lastTransition(dependency); e.Breaker != "" {
		span.Annotate(ctx, span.Transition(e))
	}
}
