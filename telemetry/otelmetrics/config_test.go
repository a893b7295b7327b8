package otelmetrics_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// TestConfigFieldsAreRead changes each optional field and sees the collection change.
func TestConfigFieldsAreRead(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{}, Adaptive: &adaptivelimit.Config{MinLimit: 3}},
	}})
	var logs bytes.Buffer
	m, reader := newMetrics(t, otelmetrics.Config{
		Clock: clk, Breakers: deps, Throttles: deps, Limits: deps, Fleet: stubFleet{},
		DurationBuckets: []float64{0.1, 1},
		MaxLabelValues:  1,
		Logger:          slog.New(slog.NewTextHandler(&logs, nil)),
	})
	ctx := context.Background()
	m.CallOutcome(ctx, observe.Call{Dependency: "search", Tool: "web_search", Outcome: classify.Succeeded, Elapsed: 500 * time.Millisecond})
	m.CallOutcome(ctx, observe.Call{Dependency: "search", Tool: "second_tool", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
	c := collect(t, reader)
	require.Contains(t, c.points(t, "agentbreaker.breaker.state"), "dependency=search,state=closed", "Config.Breakers")
	require.Contains(t, c.points(t, "agentbreaker.throttle.shed_share"), "dependency=search", "Config.Throttles")
	require.Equal(t, map[string]float64{"dependency=search": 3}, c.points(t, "agentbreaker.adaptive_limit.min"), "Config.Limits")
	require.Contains(t, c.points(t, "agentbreaker.fleet.local"), "dependency=search", "Config.Fleet")
	h := c["agentbreaker.call.duration"].Data.(metricdata.Histogram[float64])
	require.Equal(t, []float64{0.1, 1}, h.DataPoints[0].Bounds, "Config.DurationBuckets")
	require.Contains(t, c.points(t, "agentbreaker.calls"), "dependency=search,error_class=none,outcome=SUCCEEDED,tool=other", "Config.MaxLabelValues: one tool, then other")
	require.Contains(t, logs.String(), "folding new ones into", "Config.Logger")
	require.Contains(t, logs.String(), "label=tool")

	// Close stops the observable instruments.
	require.NoError(t, m.Close())
	_, ok := collect(t, reader)["agentbreaker.breaker.state"]
	require.False(t, ok)
}
