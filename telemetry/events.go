package telemetry

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// breakerInfo returns the current state and policy version of a dependency's breaker,
// or empty strings when no watched source knows it.
func (t *Telemetry) breakerInfo(dependency string) (state, policyVersion string) {
	for _, src := range t.sourceList() {
		if b, ok := src.Get(dependency); ok && b != nil {
			return b.State().String(), b.Policy().Version
		}
	}
	return "", ""
}

// ids reads the request and function call IDs from an adk-go context (agent.Context
// and agent.InvocationContext have these methods); an explicit request ID wins.
func ids(ctx context.Context, requestID string) (req, call string) {
	if requestID == "" {
		if c, ok := ctx.(interface{ InvocationID() string }); ok {
			requestID = c.InvocationID()
		}
	}
	if c, ok := ctx.(interface{ FunctionCallID() string }); ok {
		call = c.FunctionCallID()
	}
	return requestID, call
}

func attempt(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// logCall writes one record with the stable keys every call-level record carries.
func (t *Telemetry) logCall(ctx context.Context, level slog.Level, msg, dependency, requestID string, n int, extra ...slog.Attr) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !t.log.Enabled(ctx, level) {
		return
	}
	req, call := ids(ctx, requestID)
	state, version := t.breakerInfo(dependency)
	attrs := make([]slog.Attr, 0, 8+len(extra))
	attrs = append(attrs,
		slog.String(KeyDependency, dependency),
		slog.String(KeyRequestID, req),
		slog.Int(KeyAttempt, attempt(n)),
		slog.String(KeyBreakerState, state),
		slog.String(KeyPolicyVersion, version),
	)
	if call != "" {
		attrs = append(attrs, slog.String(KeyFunctionCallID, call))
	}
	attrs = append(attrs, extra...)
	t.log.LogAttrs(ctx, level, msg, attrs...)
}

// admit asks the series budget for the series of family f with these labels.
func (t *Telemetry) admit(f family, cost int, labels ...string) bool {
	k := seriesKey{fam: f}
	copy(k.labels[:], labels)
	return t.budget.admit(k, cost)
}

// admitOne is admit for a family with a single name label: it returns the label, or
// "other" when the budget refuses the series.
func (t *Telemetry) admitOne(f family, label string) string {
	if !t.admit(f, 1, label) {
		return otherLabel
	}
	return label
}

// ShortCircuit counts a call its breaker answered without sending it, logs it, and
// adds the decision to the span in ctx.
func (t *Telemetry) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	if t == nil {
		return
	}
	dep, tool, state := t.dependency.required(s.Dependency), t.tool.value(s.Tool), s.State.String()
	if !t.admit(famShortCircuits, 1, dep, tool, state) {
		dep, tool = otherLabel, otherLabel
	}
	t.shortCircuits.WithLabelValues(dep, tool, state).Inc()
	t.logCall(ctx, slog.LevelInfo, "agentbreaker: call short-circuited", s.Dependency, s.RequestID, s.Attempt,
		slog.String(KeyTool, s.Tool),
		slog.String(KeyOutcome, classify.FailedBeforeSend.String()),
		slog.String(KeyErrorClass, string(classify.ClassBreakerOpen)),
		slog.Float64(KeyRetryAfterMS, millis(s.RetryAfter)),
		slog.String(KeyReason, "breaker "+s.State.String()),
	)
	AnnotateSpan(ctx, Decision{
		Kind: DecisionShortCircuit, Dependency: s.Dependency, State: s.State.String(), Attempt: attempt(s.Attempt),
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBreakerOpen, RetryAfter: s.RetryAfter,
	})
}

// CallOutcome counts and times one attempt that was sent, logs it, and adds it to the
// span in ctx. A success logs at debug level, anything else at info.
func (t *Telemetry) CallOutcome(ctx context.Context, c observe.Call) {
	if t == nil {
		return
	}
	dep := t.dependency.required(c.Dependency)
	outcome := c.Outcome.String()
	class := string(c.Class)
	switch {
	case class == "":
		class = string(classify.ClassNone)
	default: // the library's classes pass the cap as they are (bound.ErrorClasses)
		class = t.errorClass.value(class)
	}
	tool := t.tool.value(c.Tool)
	if !t.admit(famCalls, 1, dep, tool, outcome, class) {
		t.calls.WithLabelValues(otherLabel, otherLabel, outcome, otherLabel).Inc()
	} else {
		t.calls.WithLabelValues(dep, tool, outcome, class).Inc()
	}
	if !t.admit(famDurations, t.histCost, dep, outcome) {
		dep = otherLabel
	}
	t.durations.WithLabelValues(dep, outcome).Observe(c.Elapsed.Seconds())
	level := slog.LevelInfo
	if c.Outcome == classify.Succeeded {
		level = slog.LevelDebug
	}
	t.logCall(ctx, level, "agentbreaker: call attempt", c.Dependency, c.RequestID, c.Attempt,
		slog.String(KeyTool, c.Tool),
		slog.String(KeyOutcome, outcome),
		slog.String(KeyErrorClass, string(c.Class)),
		slog.Float64(KeyElapsedMS, millis(c.Elapsed)),
		slog.Bool(KeyProbe, c.Probe),
	)
	kind := DecisionAttempt
	if c.Probe {
		kind = DecisionProbe
	}
	state, version := t.breakerInfo(c.Dependency)
	AnnotateSpan(ctx, Decision{
		Kind: kind, Dependency: c.Dependency, State: state, PolicyVersion: version, Attempt: attempt(c.Attempt),
		Outcome: c.Outcome, Class: c.Class, Elapsed: c.Elapsed,
	})
}

// BulkheadRejected counts a call refused by a full bulkhead, logs it and adds it to the
// span in ctx.
func (t *Telemetry) BulkheadRejected(ctx context.Context, dependency string) {
	if t == nil {
		return
	}
	t.bulkhead.WithLabelValues(t.admitOne(famBulkhead, t.dependency.required(dependency))).Inc()
	t.logCall(ctx, slog.LevelInfo, "agentbreaker: bulkhead full", dependency, "", 0,
		slog.String(KeyOutcome, classify.FailedBeforeSend.String()),
		slog.String(KeyErrorClass, string(classify.ClassBulkheadFull)),
	)
	AnnotateSpan(ctx, Decision{Kind: DecisionBulkheadRejected, Dependency: dependency,
		Outcome: classify.FailedBeforeSend, Class: classify.ClassBulkheadFull})
}

// RetryBudgetExhausted counts a retry refused by a spent budget, logs it and adds it to
// the span in ctx.
func (t *Telemetry) RetryBudgetExhausted(ctx context.Context, dependency string) {
	if t == nil {
		return
	}
	t.retryBudget.WithLabelValues(t.admitOne(famBudget, t.dependency.required(dependency))).Inc()
	t.logCall(ctx, slog.LevelWarn, "agentbreaker: retry budget exhausted", dependency, "", 0)
	AnnotateSpan(ctx, Decision{Kind: DecisionRetryBudgetExhausted, Dependency: dependency})
}

// Failover counts a model call moved to the next route, logs it at warning level and
// adds it to the span in ctx.
func (t *Telemetry) Failover(ctx context.Context, f observe.Failover) {
	if t == nil {
		return
	}
	cause := f.Cause
	if cause == "" {
		cause = unknownLabel
	}
	from, to, cause := t.route.required(f.From), t.route.required(f.To), t.cause.value(cause)
	if !t.admit(famFailovers, 1, from, to, cause) {
		from, to, cause = otherLabel, otherLabel, otherLabel
	}
	t.failovers.WithLabelValues(from, to, cause).Inc()
	t.logCall(ctx, slog.LevelWarn, "agentbreaker: model failover", f.From, f.RequestID, f.Attempt,
		slog.String(KeyFrom, f.From),
		slog.String(KeyTo, f.To),
		slog.String(KeyCause, f.Cause),
	)
	AnnotateSpan(ctx, Decision{Kind: DecisionFailover, Dependency: f.From, Attempt: attempt(f.Attempt), From: f.From, To: f.To, Cause: f.Cause})
}

// RouteServing marks the model route serving calls now: its gauge reads 1 and the
// previous route's reads 0. A change of route is logged.
func (t *Telemetry) RouteServing(model, region string) {
	if t == nil {
		return
	}
	if model == "" {
		t.log.Warn("agentbreaker: RouteServing called with an empty model name; ignored", KeyRegion, region)
		return
	}
	m, r := t.model.value(model), t.region.value(region)
	if !t.admit(famRouteServing, 1, m, r) {
		m, r = otherLabel, otherLabel
	}
	t.routeMu.Lock()
	prev, had := t.serving, t.servingIsSet
	if had && prev != [2]string{m, r} {
		t.routeServing.WithLabelValues(prev[0], prev[1]).Set(0)
	}
	t.routeServing.WithLabelValues(m, r).Set(1)
	t.serving, t.servingIsSet = [2]string{m, r}, true
	t.routeMu.Unlock()
	if !had || prev != [2]string{m, r} {
		t.log.Info("agentbreaker: model route serving", KeyModel, model, KeyRegion, region)
	}
}

// FallbackShare sets the share of recent turns served by a fallback route. A value
// outside [0, 1] is logged and ignored.
func (t *Telemetry) FallbackShare(share float64) {
	if t == nil {
		return
	}
	if math.IsNaN(share) || share < 0 || share > 1 {
		t.log.Warn("agentbreaker: FallbackShare outside [0, 1]; ignored", "share", share)
		return
	}
	t.mu.Lock()
	t.fallback, t.fallbackSet = share, true
	t.mu.Unlock()
}

// JournalPending sets how many journal intents await reconciliation and when the
// oldest was written; its age is computed at each scrape. A negative count is logged
// and ignored.
func (t *Telemetry) JournalPending(n int, oldest time.Time) {
	if t == nil {
		return
	}
	if n < 0 {
		t.log.Warn("agentbreaker: JournalPending with a negative count; ignored", "n", n)
		return
	}
	t.mu.Lock()
	t.journalN, t.journalOldest, t.journalSet = n, oldest, true
	t.mu.Unlock()
}

var _ observe.Spans = (*Telemetry)(nil)

// Shed adds a call the dependency's throttle held back to the span in ctx, as an
// "agentbreaker.shed" event. The shed counts are read from the throttles at scrape
// time (WatchThrottles) and the callbacks write the log record, so this only
// annotates.
func (t *Telemetry) Shed(ctx context.Context, s observe.Shed) {
	if t == nil {
		return
	}
	state, version := t.breakerInfo(s.Dependency)
	AnnotateSpan(ctx, Decision{Kind: DecisionShed, Dependency: s.Dependency, Tool: s.Tool, Priority: s.Priority,
		State: state, PolicyVersion: version, Outcome: classify.FailedBeforeSend})
}

// TransitionDuring adds the dependency's latest breaker transition to the span in
// ctx, as an "agentbreaker.transition" event with the keys of the transition's log
// record. A breaker folded into "other" by the series budget has no record kept, and
// no event.
func (t *Telemetry) TransitionDuring(ctx context.Context, dependency string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	r := t.deps[t.dependency.value(dependency)]
	var e breaker.Event
	if r != nil {
		e = r.last
	}
	t.mu.Unlock()
	if e.Breaker == "" {
		return
	}
	AnnotateSpan(ctx, span.Transition(e))
}
