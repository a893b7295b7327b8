package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// TestOTelPathAllocatesNoMoreThanPrometheus measures, through the observer interface
// the callbacks call, the allocations of each call-path report on both paths once its
// series exists: the OpenTelemetry adapter (on the SDK, exported by the Prometheus
// exporter) allocates no more than the Prometheus telemetry, without a span and in a
// context whose span records (adk-go's execute_tool span with tracing on: both then
// annotate it, and the SDK may take the measurement as an exemplar).
func TestOTelPathAllocatesNoMoreThanPrometheus(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	traced, span := tp.Tracer("test").Start(context.Background(), "execute_tool lookup_customer")
	defer span.End()
	for name, ctx := range map[string]context.Context{"untraced": context.Background(), "traced": traced} {
		t.Run(name, func(t *testing.T) { allocsNoMore(t, ctx) })
	}
}

func allocsNoMore(t *testing.T, ctx context.Context) {
	b := newBoth(t, 0, 0)
	call := observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: classify.ClassHTTP5xx, Elapsed: 30 * time.Millisecond}
	short := observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open, RetryAfter: time.Second}
	reports := []struct {
		name string
		f    func(o observe.Observer)
	}{
		{"CallOutcome", func(o observe.Observer) { o.CallOutcome(ctx, call) }},
		{"ShortCircuit", func(o observe.Observer) { o.ShortCircuit(ctx, short) }},
		{"BulkheadRejected", func(o observe.Observer) { o.BulkheadRejected(ctx, "crm") }},
		{"RetryBudgetExhausted", func(o observe.Observer) { o.RetryBudgetExhausted(ctx, "crm") }},
		{"Failover", func(o observe.Observer) {
			o.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: "http_5xx"})
		}},
	}
	for _, r := range reports {
		var per [2]float64
		for i, o := range []observe.Observer{b.tel, b.otel.m} {
			r.f(o)
			per[i] = testing.AllocsPerRun(200, func() { r.f(o) })
		}
		t.Logf("%-20s allocations per call: prometheus %.0f, opentelemetry %.0f", r.name, per[0], per[1])
		require.LessOrEqual(t, per[1], per[0], r.name)
	}
}
