package otelmetrics_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

var epoch = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// newMetrics builds a Metrics on an SDK meter provider read by a manual reader.
func newMetrics(t testing.TB, cfg otelmetrics.Config) (*otelmetrics.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg.MeterProvider = mp
	m, err := otelmetrics.New(cfg)
	require.NoError(t, err)
	return m, reader
}

// collected is one collection: instruments by name.
type collected map[string]metricdata.Metrics

func collect(t *testing.T, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := collected{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelmetrics.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func attrKey(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	return strings.Join(parts, ",")
}

// points returns an instrument's values by attribute set ("k=v,k=v", keys sorted); a
// histogram's value is its count.
func (c collected) points(t *testing.T, name string) map[string]float64 {
	t.Helper()
	m, ok := c[name]
	require.True(t, ok, "instrument %s was not collected", name)
	out := map[string]float64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out[attrKey(p.Attributes)] = p.Value
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			out[attrKey(p.Attributes)] = p.Value
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[attrKey(p.Attributes)] = float64(p.Count)
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return out
}

func (c collected) names() []string {
	var out []string
	for n := range c {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// stubFleet stands for a *fleet.Fleet, read through otelmetrics.FleetSource.
type stubFleet struct{}

func (stubFleet) Scope(string) string { return "local" }
func (stubFleet) Counters() (syncs, failures, outages, commands int64) {
	return 10, 2, 1, 12
}
func (stubFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { yield("timeout", 2) }
}

// exercise reports one of everything to m, from a dependency map whose breaker
// "billing" trips and is closed by a user call's probe, and returns the clock.
func exercise(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) {
	t.Helper()
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: clk,
		Dependencies: map[string]dependencymap.Dependency{
			"crm":     {Tools: []string{"lookup_customer"}, Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 2, MinSamples: 1, UpdateInterval: time.Second}},
			"search":  {Tools: []string{"web_search"}, Throttle: &throttle.Config{}},
			"billing": {Tools: []string{"get_invoice"}, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){m.BreakerEvent},
	})
	m.Watch(deps)
	m.WatchThrottles(deps)
	m.WatchLimits(deps)
	m.WatchFleet(stubFleet{})
	ctx := context.Background()
	m.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
	m.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
	m.BulkheadRejected(ctx, "crm")
	m.RetryBudgetExhausted(ctx, "crm")
	m.WouldRefuse(ctx, "crm", "breaker")
	m.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: "http_5xx"})
	m.RouteServing("pro", "a")
	m.RouteServing("pro", "b")
	m.FallbackShare(0.1)
	m.JournalPending(1, epoch.Add(-time.Minute))
	m.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: "export_report", Limit: time.Second, Running: 1})
	b, _ := deps.Get("billing")
	if p, err := b.Allow(); err == nil {
		p.Failure()
	}
	clk.Advance(time.Minute)
	p, err := b.Allow()
	require.NoError(t, err, "the probe after the cooldown")
	p.Success()
	m.ModelObserver().ObserveCall(ctx, modelCall())
	crm, _ := deps.Get("crm")
	if p, err := crm.Allow(); err == nil {
		p.Success() // one call in crm's window
	}
	adaptive(t, deps.Limiter("crm"), clk.Now())
}

// adaptive drives l (limit 2, floor 1, one sample an update) through a refusal and an
// update: two critical calls started 2 s before now fill the limit and a low one is
// refused; the first ends at now after 2 s, which measures a no-load latency of 2 s
// and, the limit being full, raises it to 3 (2 + √2, rounded).
func adaptive(t *testing.T, l *adaptivelimit.Limiter, now time.Time) {
	t.Helper()
	start := now.Add(-2 * time.Second)
	p1, err := l.AcquireAt(start, throttle.Critical)
	require.NoError(t, err)
	p2, err := l.AcquireAt(start, throttle.Critical)
	require.NoError(t, err)
	_, err = l.AcquireAt(start, throttle.Low)
	require.ErrorIs(t, err, adaptivelimit.ErrLimited)
	p1.DoneAt(now)
	p2.Release()
	require.Equal(t, 3, l.Limit())
}

func providerForTest(t *testing.T) *sdkmetric.MeterProvider {
	t.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}
