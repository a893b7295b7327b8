package otelmetrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// promSeries counts the series a collection becomes in Prometheus: a histogram data
// point is its buckets, +Inf, _sum and _count.
func (c collected) promSeries() int {
	n := 0
	for _, m := range c {
		switch d := m.Data.(type) {
		case metricdata.Sum[float64]:
			n += len(d.DataPoints)
		case metricdata.Gauge[float64]:
			n += len(d.DataPoints)
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				n += len(p.Bounds) + 3
			}
		}
	}
	return n
}

// feedInvented reports n invented dependency, tool, model and error-class names,
// hostile bytes included, and n breakers named by the model.
func feedInvented(m *otelmetrics.Metrics, n int, clk *clock.Fake) *dependencymap.Map {
	ctx := context.Background()
	deps := map[string]dependencymap.Dependency{}
	for i := range n / 10 {
		deps[fmt.Sprintf("dep-%d", i)] = dependencymap.Dependency{Tools: []string{fmt.Sprintf("made_up_%d", i)}}
	}
	dm := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: deps,
		OnStateChange: []func(breaker.Event){m.BreakerEvent}})
	m.Watch(dm)
	for i := range n {
		dep, tool := fmt.Sprintf("dep-%d\x00\xff", i), fmt.Sprintf("tool_%d_%s", i, strings.Repeat("x", 200))
		m.CallOutcome(ctx, observe.Call{Dependency: dep, Tool: tool, Outcome: classify.Failed, Class: classify.Class(fmt.Sprintf("invented_%d", i)), Elapsed: time.Second})
		m.ShortCircuit(ctx, observe.ShortCircuit{Dependency: dep, Tool: tool, State: breaker.Open})
		m.BulkheadRejected(ctx, dep)
		m.RetryBudgetExhausted(ctx, dep)
		m.Failover(ctx, observe.Failover{From: fmt.Sprintf("m%d@r", i), To: fmt.Sprintf("m%d@s", i), Cause: fmt.Sprintf("cause_%d", i)})
		m.RouteServing(fmt.Sprintf("model-%d", i), "region")
		m.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: tool})
		m.BreakerEvent(breaker.Event{Breaker: dep, From: breaker.Closed, To: breaker.ForcedOpen, Cause: breaker.CauseOperator, At: clk.Now()})
	}
	return dm
}

// TestInventedNamesStayWithinTheBound feeds thousands of invented names: the
// collection never holds more than Config.SeriesBound series, folded reports land on
// "other" and are counted per family, and no attribute value is longer than the
// Prometheus side's cap or holds a control character.
func TestInventedNamesStayWithinTheBound(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	cfg := otelmetrics.Config{Clock: clk, MaxSeries: 500, MaxLabelValues: 200}
	m, reader := newMetrics(t, cfg)
	feedInvented(m, 2000, clk)
	c := collect(t, reader)
	require.LessOrEqual(t, c.promSeries(), cfg.SeriesBound())
	require.Greater(t, c.promSeries(), cfg.MaxSeries/2, "the budget is used")

	calls := c.points(t, "agentbreaker.calls")
	require.Contains(t, calls, "dependency=other,error_class=other,outcome=FAILED,tool=other")
	overflow := c.points(t, "agentbreaker.telemetry.series_overflow")
	require.Positive(t, overflow["metric=agentbreaker_calls_total"])
	require.Positive(t, overflow["metric=agentbreaker_breaker_state"])
	require.Contains(t, c.points(t, "agentbreaker.breaker.state"), "dependency=other,state=forced_open")
	for name, mt := range c {
		var sets []string
		switch d := mt.Data.(type) {
		case metricdata.Sum[float64]:
			for _, p := range d.DataPoints {
				for _, kv := range p.Attributes.ToSlice() {
					sets = append(sets, kv.Value.AsString())
				}
			}
		case metricdata.Gauge[float64]:
			for _, p := range d.DataPoints {
				for _, kv := range p.Attributes.ToSlice() {
					sets = append(sets, kv.Value.AsString())
				}
			}
		}
		for _, v := range sets {
			require.LessOrEqual(t, len(v), 128, name)
			require.NotContains(t, v, "\x00", name)
		}
	}

	// The caps hold per attribute too: with a tiny MaxLabelValues, at most that many
	// tools, then "other".
	m2, reader2 := newMetrics(t, otelmetrics.Config{Clock: clk, MaxLabelValues: 3})
	feedInvented(m2, 50, clk)
	tools := map[string]bool{}
	for k := range collect(t, reader2).points(t, "agentbreaker.short_circuits") {
		for _, part := range strings.Split(k, ",") {
			if v, ok := strings.CutPrefix(part, "tool="); ok {
				tools[v] = true
			}
		}
	}
	require.Len(t, tools, 4, "three tools and other: %v", tools)
	require.True(t, tools["other"])
}
