package telemetry

import (
	"context"
	"log/slog"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
)

// Probe results, the values of the result label of agentbreaker_breaker_probes_total.
const (
	ProbeSucceeded = metrics.ProbeSucceeded
	ProbeFailed    = metrics.ProbeFailed
	// ProbeExpired is a probe lease that ran out before its caller reported.
	ProbeExpired = metrics.ProbeExpired
)

// Probe sources, the values of the source label of agentbreaker_breaker_probe_results_total.
const (
	// ProbeSourceHealth is the dependency's own health probe (package probe).
	ProbeSourceHealth = metrics.ProbeSourceHealth
	// ProbeSourceUser is a user's call that was the half-open probe.
	ProbeSourceUser = metrics.ProbeSourceUser
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
		slog.String(KeyDependency, e.Breaker),
		slog.String(KeyFrom, e.From.String()),
		slog.String(KeyTo, e.To.String()),
		slog.String(KeyCause, e.Cause.String()),
		slog.String(KeyReason, e.Reason),
		slog.String(KeyBreakerState, e.To.String()),
		slog.String(KeyPolicyVersion, e.PolicyVersion),
		slog.Uint64(KeyGeneration, e.Generation),
		slog.Int64(KeyWindowCalls, e.Window.Calls),
		slog.Int64(KeyWindowFailedCalls, e.Window.Failures),
	}
	if !e.ReopenAt.IsZero() {
		attrs = append(attrs, slog.Time(KeyReopenAt, e.ReopenAt))
	}
	if e.HealthProbe {
		attrs = append(attrs, slog.Bool(KeyHealthProbe, true))
	}
	msg := "agentbreaker: breaker state changed"
	if e.From == e.To {
		msg = "agentbreaker: breaker reopen time moved later"
	}
	t.log.LogAttrs(ctx, level, msg, attrs...)
}
