package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

// TestCallPathAllocatesNothing: once a series exists, reporting to it through the
// observer interface the callbacks call allocates nothing on the SDK's meter provider
// (the attribute set and the option slice are built once per series). The Prometheus
// telemetry's figures for the same calls are compared in test/otelmetrics.
func TestCallPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m, _ := newMetrics(t, otelmetrics.Config{})
	var o observe.Observer = m
	ctx := context.Background()
	call := observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: classify.ClassHTTP5xx, Elapsed: 30 * time.Millisecond}
	short := observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open, RetryAfter: time.Second}
	for name, f := range map[string]func(){
		"CallOutcome":          func() { o.CallOutcome(ctx, call) },
		"ShortCircuit":         func() { o.ShortCircuit(ctx, short) },
		"BulkheadRejected":     func() { o.BulkheadRejected(ctx, "crm") },
		"RetryBudgetExhausted": func() { o.RetryBudgetExhausted(ctx, "crm") },
	} {
		f() // the series' first report builds its attribute set
		require.Zero(t, testing.AllocsPerRun(200, f), name)
	}
}

func BenchmarkCallOutcome(b *testing.B) {
	m, _ := newMetrics(b, otelmetrics.Config{})
	m.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Class: classify.ClassNone})
	b.ResetTimer()
	ctx := context.Background()
	call := observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Class: classify.ClassNone, Elapsed: 30 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.CallOutcome(ctx, call)
		}
	})
}
