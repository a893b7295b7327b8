package otelmetrics_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

// TestReportsRaceCollections reports from many goroutines while collections run (run
// it under -race): every report is counted once.
func TestReportsRaceCollections(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	m, reader := newMetrics(t, otelmetrics.Config{Clock: clk})
	exercise(t, m, clk)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			collect(t, reader)
		}
	}()
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			dep := fmt.Sprintf("dep-%d", w%3)
			for i := range each {
				m.CallOutcome(ctx, observe.Call{Dependency: dep, Tool: "t", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
				m.ShortCircuit(ctx, observe.ShortCircuit{Dependency: dep, Tool: "t", State: breaker.Open})
				m.BreakerEvent(breaker.Event{Breaker: dep, From: breaker.Closed, To: breaker.Open, Cause: breaker.CauseFailureRate, At: epoch})
				m.RouteServing(fmt.Sprintf("m%d", i%4), "r")
				m.JournalPending(i, epoch)
				m.TransitionDuring(ctx, dep)
			}
		})
	}
	wg.Wait()
	<-done
	c := collect(t, reader)
	total := 0.0
	for k, v := range c.points(t, "agentbreaker.calls") {
		if k != "dependency=crm,error_class=none,outcome=SUCCEEDED,tool=lookup_customer" {
			total += v
		}
	}
	require.Equal(t, float64(workers*each), total)
	trips := 0.0
	for k, v := range c.points(t, "agentbreaker.breaker.transitions") {
		if len(k) > 0 && v > 0 && k[len(k)-len("to=open"):] == "to=open" && k[:len("cause=failure_rate,dependency=dep")] == "cause=failure_rate,dependency=dep" {
			trips += v
		}
	}
	require.Equal(t, float64(workers*each), trips)
}
