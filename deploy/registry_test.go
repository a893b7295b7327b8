package deploy

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// exportedFamilies registers a real Telemetry, reports one of everything, and returns
// the metric family names a scrape shows, with their types. It fails if some family
// the telemetry describes never showed up, so the list cannot silently shrink when a
// metric is added without being exercised.
func exportedFamilies(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	tel := exerciseTelemetry(t, reg)
	families, err := reg.Gather()
	require.NoError(t, err)
	out := make(map[string]dto.MetricType, len(families))
	for _, mf := range families {
		out[mf.GetName()] = mf.GetType()
	}
	descs := make(chan *prometheus.Desc)
	go func() {
		tel.Describe(descs)
		close(descs)
	}()
	described := 0
	for range descs {
		described++
	}
	require.Len(t, out, described, "every described metric family must be exercised in exerciseTelemetry")
	return out
}

// exerciseTelemetry registers a Telemetry on reg and reports one of everything.
func exerciseTelemetry(t *testing.T, reg prometheus.Registerer) *telemetry.Telemetry {
	t.Helper()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm":    {Tools: []string{"lookup_customer"}},
			"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{}},
		},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)
	tel.WatchThrottles(deps)
	ctx := context.Background()
	tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
	tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
	tel.BulkheadRejected(ctx, "crm")
	tel.RetryBudgetExhausted(ctx, "crm")
	tel.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: "http_5xx"})
	tel.RouteServing("pro", "b")
	tel.FallbackShare(0.1)
	tel.JournalPending(1, time.Now())
	tel.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: "export_report", Limit: time.Second, Running: 1})
	tel.WatchFleet(stubFleet{})
	// A breaker that trips and is closed by a user call's probe: the probe results.
	clk := clock.NewFake(time.Unix(0, 0))
	b := breaker.MustNew(breaker.Config{Name: "billing", Clock: clk, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent}})
	if p, err := b.Allow(); err == nil {
		p.Failure()
	}
	clk.Advance(time.Minute)
	if p, err := b.Allow(); err == nil {
		p.Success()
	}
	return tel
}

// stubFleet stands for a *fleet.Fleet (its metrics are read through
// telemetry.FleetSource), so this package's tests need no Redis; test/admin scrapes a
// real one.
type stubFleet struct{}

func (stubFleet) Scope(string) string { return "local" }
func (stubFleet) Counters() (syncs, failures, outages, commands int64) {
	return 10, 2, 1, 12
}
func (stubFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { yield("timeout", 2) }
}

// seriesNames expands families into the names a query can select: a histogram family
// h is queried as h_bucket, h_sum and h_count.
func seriesNames(families map[string]dto.MetricType) map[string]string {
	out := make(map[string]string)
	for name, typ := range families {
		switch typ {
		case dto.MetricType_HISTOGRAM:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = name
			}
		case dto.MetricType_SUMMARY:
			out[name] = name
			for _, suffix := range []string{"_sum", "_count"} {
				out[name+suffix] = name
			}
		default:
			out[name] = name
		}
	}
	return out
}
