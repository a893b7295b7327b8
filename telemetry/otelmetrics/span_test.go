package otelmetrics_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

func eventAttrs(e sdktrace.Event) map[string]any {
	out := map[string]any{}
	for _, kv := range e.Attributes {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// TestDecisionsLandOnTheSpanInContext: sheds, failovers and the breaker transition a
// call caused are events on the span in the call's context, with the keys of the log
// records under "agentbreaker.".
func TestDecisionsLandOnTheSpanInContext(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	clk := clock.NewFake(epoch)
	m, _ := newMetrics(t, otelmetrics.Config{Clock: clk})
	ctx, span := tp.Tracer("test").Start(context.Background(), "execute_tool get_invoice")

	b := breaker.MustNew(breaker.Config{Name: "billing", Clock: clk, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1, Version: "v3"},
		OnStateChange: []func(breaker.Event){m.BreakerEvent}})
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	m.TransitionDuring(ctx, "billing")
	m.Shed(ctx, observe.Shed{Dependency: "search", Tool: "web_search", Priority: "low"})
	m.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: "http_5xx", Attempt: 2})
	m.TransitionDuring(ctx, "unknown") // nothing recorded for it: no event
	span.End()

	ended := rec.Ended()
	require.Len(t, ended, 1)
	ev := ended[0].Events()
	require.Len(t, ev, 3)
	require.Equal(t, "agentbreaker.transition", ev[0].Name)
	require.Subset(t, eventAttrs(ev[0]), map[string]any{
		"agentbreaker.decision": "transition", "agentbreaker.dependency": "billing", "agentbreaker.from": "closed",
		"agentbreaker.to": "open", "agentbreaker.cause": "failure_rate", "agentbreaker.breaker_state": "open",
		"agentbreaker.policy_version": "v3", "agentbreaker.generation": int64(1), "agentbreaker.window_calls": int64(1),
		"agentbreaker.window_failed_calls": int64(1),
	})
	require.Contains(t, eventAttrs(ev[0]), "agentbreaker.reason")
	require.Equal(t, "agentbreaker.shed", ev[1].Name)
	require.Subset(t, eventAttrs(ev[1]), map[string]any{"agentbreaker.dependency": "search", "agentbreaker.tool": "web_search",
		"agentbreaker.priority": "low", "agentbreaker.outcome": "FAILED_BEFORE_SEND"})
	require.Equal(t, "agentbreaker.failover", ev[2].Name)
	require.Subset(t, eventAttrs(ev[2]), map[string]any{"agentbreaker.from": "pro@a", "agentbreaker.to": "pro@b", "agentbreaker.cause": "http_5xx", "agentbreaker.attempt": int64(2)})
}
