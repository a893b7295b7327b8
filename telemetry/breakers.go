package telemetry

import (
	"context"
	"log/slog"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// BreakerEvent records a breaker state change and logs it. Pass it to
// dependencymap.Config.OnStateChange (or breaker.Config.OnStateChange).
func (t *Telemetry) BreakerEvent(e breaker.Event) {
	if t == nil {
		return
	}
	t.s.Heard(e) // so that a Wire of the same map does not count it again
	t.breakerEvent(e)
}

// breakerEvent is BreakerEvent without Heard: the listener Wire attaches.
func (t *Telemetry) breakerEvent(e breaker.Event) {
	t.s.BreakerEvent(e)

	level := slog.LevelInfo
	if e.To == breaker.Open || e.To == breaker.ForcedOpen || e.Cause == breaker.CauseOperator {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if !t.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String(keyDependency, e.Breaker),
		slog.String(keyFrom, e.From.String()),
		slog.String(keyTo, e.To.String()),
		slog.String(keyCause, e.Cause.String()),
		slog.String(keyReason, e.Reason),
		slog.String(keyBreakerState, e.To.String()),
		slog.String(keyPolicyVersion, e.PolicyVersion),
		slog.Uint64(keyGeneration, e.Generation),
		slog.Int64(keyWindowCalls, e.Window.Calls),
		slog.Int64(keyWindowFailedCalls, e.Window.Failures),
	}
	if !e.ReopenAt.IsZero() {
		attrs = append(attrs, slog.Time(keyReopenAt, e.ReopenAt))
	}
	if e.HealthProbe {
		attrs = append(attrs, slog.Bool(keyHealthProbe, true))
	}
	msg := "agentbreaker: breaker state changed"
	if e.From == e.To {
		msg = "agentbreaker: breaker reopen time moved later"
	}
	t.log.LogAttrs(ctx, level, msg, attrs...)
}
