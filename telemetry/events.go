package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

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
	state, version := t.s.BreakerInfo(dependency)
	attrs := make([]slog.Attr, 0, 8+len(extra))
	attrs = append(attrs,
		slog.String(keyDependency, dependency),
		slog.String(keyRequestID, req),
		slog.Int(keyAttempt, metrics.Attempt(n)),
		slog.String(keyBreakerState, state),
		slog.String(keyPolicyVersion, version),
	)
	if call != "" {
		attrs = append(attrs, slog.String(keyFunctionCallID, call))
	}
	attrs = append(attrs, extra...)
	t.log.LogAttrs(ctx, level, msg, attrs...)
}

// ShortCircuit counts a call its breaker answered without sending it, logs it, and
// adds the decision to the span in ctx.
func (t *Telemetry) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	if t == nil {
		return
	}
	t.s.ShortCircuit(ctx, s)
	t.logCall(ctx, slog.LevelInfo, "agentbreaker: call short-circuited", s.Dependency, s.RequestID, s.Attempt,
		slog.String(keyTool, s.Tool),
		slog.String(keyOutcome, classify.FailedBeforeSend.String()),
		slog.String(keyErrorClass, string(classify.ClassBreakerOpen)),
		slog.Float64(keyRetryAfterMS, millis(s.RetryAfter)),
		slog.String(keyReason, "breaker "+s.State.String()),
	)
}

// CallOutcome counts and times one attempt that was sent, logs it, and adds it to the
// span in ctx. A success logs at debug level, anything else at info.
func (t *Telemetry) CallOutcome(ctx context.Context, c observe.Call) {
	if t == nil {
		return
	}
	t.s.CallOutcome(ctx, c)
	level := slog.LevelInfo
	if c.Outcome == classify.Succeeded {
		level = slog.LevelDebug
	}
	t.logCall(ctx, level, "agentbreaker: call attempt", c.Dependency, c.RequestID, c.Attempt,
		slog.String(keyTool, c.Tool),
		slog.String(keyOutcome, c.Outcome.String()),
		slog.String(keyErrorClass, string(c.Class)),
		slog.Float64(keyElapsedMS, millis(c.Elapsed)),
		slog.Bool(keyProbe, c.Probe),
	)
}

// BulkheadRejected counts a call refused by a full bulkhead, logs it and adds it to the
// span in ctx.
func (t *Telemetry) BulkheadRejected(ctx context.Context, dependency string) {
	if t == nil {
		return
	}
	t.s.BulkheadRejected(ctx, dependency)
	t.logCall(ctx, slog.LevelInfo, "agentbreaker: bulkhead full", dependency, "", 0,
		slog.String(keyOutcome, classify.FailedBeforeSend.String()),
		slog.String(keyErrorClass, string(classify.ClassBulkheadFull)),
	)
}

// WouldRefuse counts a call that control of a dependency in shadow mode would have
// refused (observe.Shadow); the call was sent. The callbacks log it.
func (t *Telemetry) WouldRefuse(ctx context.Context, dependency, control string) {
	if t == nil {
		return
	}
	t.s.WouldRefuse(ctx, dependency, control)
}

// RetryBudgetExhausted counts a retry refused by a spent budget, logs it and adds it to
// the span in ctx.
func (t *Telemetry) RetryBudgetExhausted(ctx context.Context, dependency string) {
	if t == nil {
		return
	}
	t.s.RetryBudgetExhausted(ctx, dependency)
	t.logCall(ctx, slog.LevelWarn, "agentbreaker: retry budget exhausted", dependency, "", 0)
}

// Failover counts a model call moved to the next route, logs it at warning level and
// adds it to the span in ctx.
func (t *Telemetry) Failover(ctx context.Context, f observe.Failover) {
	if t == nil {
		return
	}
	t.s.Failover(ctx, f)
	t.logCall(ctx, slog.LevelWarn, "agentbreaker: model failover", f.From, f.RequestID, f.Attempt,
		slog.String(keyFrom, f.From),
		slog.String(keyTo, f.To),
		slog.String(keyCause, f.Cause),
	)
}

// RouteServing marks the model route serving calls now: its gauge reads 1 and the
// previous route's reads 0. A change of route is logged.
func (t *Telemetry) RouteServing(model, region string) {
	if t != nil && t.s.RouteServing(model, region) {
		t.log.Info("agentbreaker: model route serving", keyModel, model, keyRegion, region)
	}
}

// FallbackShare sets the share of recent turns served by a fallback route. A value
// outside [0, 1] is logged and ignored.
func (t *Telemetry) FallbackShare(share float64) { t.state().FallbackShare(share) }

// JournalPending sets how many journal intents await reconciliation and when the
// oldest was written; its age is computed at each scrape. A negative count is logged
// and ignored.
func (t *Telemetry) JournalPending(n int, oldest time.Time) { t.state().JournalPending(n, oldest) }

var _ observe.Spans = (*Telemetry)(nil)

// Shed adds a call the dependency's throttle held back to the span in ctx, as an
// "agentbreaker.shed" event. The shed counts are read from the throttles at scrape
// time (WatchThrottles) and the callbacks write the log record, so this only
// annotates.
func (t *Telemetry) Shed(ctx context.Context, s observe.Shed) { t.state().Shed(ctx, s) }

// TransitionDuring adds the dependency's latest breaker transition to the span in
// ctx, as an "agentbreaker.transition" event with the keys of the transition's log
// record. A breaker folded into "other" by the series budget has no record kept, and
// no event.
func (t *Telemetry) TransitionDuring(ctx context.Context, dependency string) {
	t.state().TransitionDuring(ctx, dependency)
}
