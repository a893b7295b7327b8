package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

func modelCall() modelfailover.Call {
	return modelfailover.Call{ServedBy: modelfailover.ServedFallback,
		Route:        modelfailover.Endpoint{Name: "pro@b", Model: "pro", Region: "b"},
		FallbackFrom: modelfailover.Endpoint{Name: "pro@a", Model: "pro", Region: "a", Primary: true}, FallbackCause: "http_5xx"}
}

// allInstruments is every instrument the adapter makes, with its unit. A new row in
// the adapter's table that is not added here (and exercised) fails
// TestEveryInstrumentIsCollected.
var allInstruments = map[string]string{
	"agentbreaker.calls":                       "{call}",
	"agentbreaker.call.duration":               "s",
	"agentbreaker.short_circuits":              "{call}",
	"agentbreaker.bulkhead.rejections":         "{call}",
	"agentbreaker.retry_budget.exhausted":      "{retry}",
	"agentbreaker.model.failovers":             "{failover}",
	"agentbreaker.model.fallback_calls":        "{call}",
	"agentbreaker.tool_calls.abandoned":        "{call}",
	"agentbreaker.tool.calls.abandoned":        "{call}",
	"agentbreaker.breaker.state":               "{breaker}",
	"agentbreaker.breaker.open_duration":       "s",
	"agentbreaker.breaker.open":                "s",
	"agentbreaker.breaker.retry_after":         "s",
	"agentbreaker.breaker.window.calls":        "{call}",
	"agentbreaker.breaker.window.failed_calls": "{call}",
	"agentbreaker.breaker.window.slow_calls":   "{call}",
	"agentbreaker.breaker.probes_in_flight":    "{probe}",
	"agentbreaker.breaker.transitions":         "{transition}",
	"agentbreaker.breaker.probes":              "{probe}",
	"agentbreaker.breaker.probe_results":       "{probe}",
	"agentbreaker.breaker.cooldown_extensions": "{extension}",
	"agentbreaker.policy.info":                 "{policy}",
	"agentbreaker.journal.pending_intents":     "{intent}",
	"agentbreaker.journal.oldest_pending_age":  "s",
	"agentbreaker.model.fallback_ratio":        "1",
	"agentbreaker.model.route_serving":         "{route}",
	"agentbreaker.start_time":                  "s",
	"agentbreaker.telemetry.series_overflow":   "{report}",
	"agentbreaker.throttle.shed_share":         "",
	"agentbreaker.throttle.shed":               "{call}",
	"agentbreaker.adaptive_limit":              "{call}",
	"agentbreaker.adaptive_limit.min":          "{call}",
	"agentbreaker.adaptive_limit.no_load":      "s",
	"agentbreaker.adaptive_limit.refused":      "{call}",
	"agentbreaker.fleet.syncs":                 "{sync}",
	"agentbreaker.fleet.sync_failures":         "{sync}",
	"agentbreaker.fleet.outages":               "{outage}",
	"agentbreaker.fleet.redis_commands":        "{command}",
	"agentbreaker.fleet.local":                 "{breaker}",
	"agentbreaker.fleet.sync_errors":           "{sync}",
	"agentbreaker.shadow.refusals":             "{call}",
}

// TestEveryInstrumentIsCollected reports one of everything and reads it back with the
// SDK's manual reader: every instrument is there with its unit, and each holds the
// values the reports imply.
func TestEveryInstrumentIsCollected(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	m, reader := newMetrics(t, otelmetrics.Config{Clock: clk})
	exercise(t, m, clk)
	c := collect(t, reader)
	var want []string
	for name := range allInstruments {
		want = append(want, name)
	}
	require.ElementsMatch(t, otelmetrics.InstrumentNames(), want, "allInstruments lists every row of the table")
	require.ElementsMatch(t, want, c.names())
	for name, unit := range allInstruments {
		require.Equal(t, unit, c[name].Unit, name)
		require.NotEmpty(t, c[name].Description, name)
	}

	// Synchronous counters and the histogram.
	require.Equal(t, map[string]float64{"dependency=crm,error_class=none,outcome=SUCCEEDED,tool=lookup_customer": 1}, c.points(t, "agentbreaker.calls"))
	require.Equal(t, map[string]float64{"dependency=crm,outcome=SUCCEEDED": 1}, c.points(t, "agentbreaker.call.duration"))
	h := c["agentbreaker.call.duration"].Data.(metricdata.Histogram[float64])
	require.Equal(t, otelmetrics.DefaultDurationBuckets, h.DataPoints[0].Bounds)
	require.Equal(t, metricdata.CumulativeTemporality, h.Temporality)
	require.Equal(t, map[string]float64{"dependency=crm,state=open,tool=lookup_customer": 1}, c.points(t, "agentbreaker.short_circuits"))
	// The watched dependencies without an event are there at 0 (issue 48 item 5).
	atZero := map[string]float64{"dependency=crm": 1, "dependency=billing": 0, "dependency=search": 0}
	require.Equal(t, atZero, c.points(t, "agentbreaker.bulkhead.rejections"))
	require.Equal(t, atZero, c.points(t, "agentbreaker.retry_budget.exhausted"))
	require.Equal(t, map[string]float64{"cause=http_5xx,from=pro@a,to=pro@b": 1}, c.points(t, "agentbreaker.model.failovers"))
	require.Equal(t, map[string]float64{"cause=http_5xx,from=pro@a,to=pro@b": 1}, c.points(t, "agentbreaker.model.fallback_calls"))
	// And so are the tools the map names.
	abandoned := map[string]float64{"tool=export_report": 1, "tool=get_invoice": 0, "tool=lookup_customer": 0, "tool=web_search": 0}
	require.Equal(t, abandoned, c.points(t, "agentbreaker.tool_calls.abandoned"))
	require.Equal(t, abandoned, c.points(t, "agentbreaker.tool.calls.abandoned"))
	require.False(t, c["agentbreaker.tool_calls.abandoned"].Data.(metricdata.Sum[float64]).IsMonotonic, "a gauge moved up and down")
	require.True(t, c["agentbreaker.tool.calls.abandoned"].Data.(metricdata.Sum[float64]).IsMonotonic)

	// Read at collection time: billing tripped, then a user call's probe closed it.
	state := c.points(t, "agentbreaker.breaker.state")
	require.Equal(t, 1.0, state["dependency=billing,state=closed"])
	require.Equal(t, 0.0, state["dependency=billing,state=open"])
	require.Len(t, state, 3*5, "five states for each of three breakers")
	tr := c.points(t, "agentbreaker.breaker.transitions")
	require.Equal(t, 1.0, tr["cause=failure_rate,dependency=billing,from=closed,to=open"])
	require.Equal(t, 1.0, tr["cause=cooldown_elapsed,dependency=billing,from=open,to=half_open"])
	require.Equal(t, 1.0, tr["cause=probe_succeeded,dependency=billing,from=half_open,to=closed"])
	require.Equal(t, 0.0, tr["cause=slow_call_rate,dependency=crm,from=closed,to=open"], "automatic transitions start at 0")
	require.Equal(t, 1.0, c.points(t, "agentbreaker.breaker.probes")["dependency=billing,result=succeeded"])
	require.Equal(t, map[string]float64{"dependency=billing,result=succeeded,source=user_call": 1}, c.points(t, "agentbreaker.breaker.probe_results"))
	require.Equal(t, 60.0, c.points(t, "agentbreaker.breaker.open")["dependency=billing"], "open for the minute before the probe")
	require.Equal(t, 0.0, c.points(t, "agentbreaker.breaker.open_duration")["dependency=billing"])
	require.Equal(t, 1.0, c.points(t, "agentbreaker.breaker.window.calls")["dependency=crm"])
	require.Equal(t, 1.0, c.points(t, "agentbreaker.policy.info")["dependency=crm,version="], "the policy version in force")
	require.Equal(t, map[string]float64{"": 1}, c.points(t, "agentbreaker.journal.pending_intents"))
	require.Equal(t, map[string]float64{"": 120}, c.points(t, "agentbreaker.journal.oldest_pending_age"), "written a minute before the start, read a minute after")
	require.Equal(t, map[string]float64{"": 0.1}, c.points(t, "agentbreaker.model.fallback_ratio"))
	require.Equal(t, map[string]float64{"model=pro,region=a": 0, "model=pro,region=b": 1}, c.points(t, "agentbreaker.model.route_serving"))
	require.Equal(t, float64(epoch.Unix()), c.points(t, "agentbreaker.start_time")[""])
	require.Equal(t, 0.0, c.points(t, "agentbreaker.telemetry.series_overflow")["metric=agentbreaker_calls_total"])
	require.Equal(t, map[string]float64{"dependency=search": 0}, c.points(t, "agentbreaker.throttle.shed_share"))
	require.Len(t, c.points(t, "agentbreaker.throttle.shed"), 4, "one per priority")
	require.Equal(t, map[string]float64{"dependency=crm": 3}, c.points(t, "agentbreaker.adaptive_limit"))
	require.Equal(t, map[string]float64{"dependency=crm": 1}, c.points(t, "agentbreaker.adaptive_limit.min"))
	require.Equal(t, map[string]float64{"dependency=crm": 2}, c.points(t, "agentbreaker.adaptive_limit.no_load"))
	require.Equal(t, map[string]float64{
		"dependency=crm,priority=low": 1, "dependency=crm,priority=normal": 0,
		"dependency=crm,priority=high": 0, "dependency=crm,priority=critical": 0,
	}, c.points(t, "agentbreaker.adaptive_limit.refused"))
	require.Equal(t, map[string]float64{"": 10}, c.points(t, "agentbreaker.fleet.syncs"))
	require.Equal(t, map[string]float64{"": 2}, c.points(t, "agentbreaker.fleet.sync_failures"))
	require.Equal(t, map[string]float64{"": 1}, c.points(t, "agentbreaker.fleet.outages"))
	require.Equal(t, map[string]float64{"": 12}, c.points(t, "agentbreaker.fleet.redis_commands"))
	require.Equal(t, map[string]float64{"error=timeout": 2}, c.points(t, "agentbreaker.fleet.sync_errors"))
	require.Equal(t, 1.0, c.points(t, "agentbreaker.fleet.local")["dependency=billing"])

	// The abandoned call returns: the gauge goes back to 0, the counter stays.
	m.ToolAbandoned(context.Background(), tooltimeout.Abandon{Tool: "export_report", Returned: true})
	c = collect(t, reader)
	abandoned["tool=export_report"] = 0
	require.Equal(t, abandoned, c.points(t, "agentbreaker.tool_calls.abandoned"))
	require.Equal(t, 1.0, c.points(t, "agentbreaker.tool.calls.abandoned")["tool=export_report"])
}

// TestStateIsReadAtCollection: the open duration grows with the clock between two
// collections without any event, as a Prometheus scrape reads it.
func TestStateIsReadAtCollection(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	m, reader := newMetrics(t, otelmetrics.Config{Clock: clk})
	exercise(t, m, clk)
	m.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: classify.ClassHTTP5xx})
	require.Equal(t, 120.0, collect(t, reader).points(t, "agentbreaker.journal.oldest_pending_age")[""])
	clk.Advance(90 * time.Second)
	require.Equal(t, 210.0, collect(t, reader).points(t, "agentbreaker.journal.oldest_pending_age")[""])
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   otelmetrics.Config
		field string
	}{
		{"no provider", otelmetrics.Config{}, "MeterProvider"},
		{"negative label values", otelmetrics.Config{MaxLabelValues: -1}, "MaxLabelValues"},
		{"negative series", otelmetrics.Config{MaxSeries: -3}, "MaxSeries"},
		{"empty buckets", otelmetrics.Config{DurationBuckets: []float64{}}, "DurationBuckets"},
		{"decreasing buckets", otelmetrics.Config{DurationBuckets: []float64{1, 0.5}}, "DurationBuckets[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			if tc.field != "MeterProvider" {
				cfg.MeterProvider = providerForTest(t)
			}
			_, err := otelmetrics.New(cfg)
			var ce *otelmetrics.ConfigError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, otelmetrics.ErrConfig)
			require.Equal(t, tc.field, ce.Field)
			require.Contains(t, err.Error(), tc.field)
		})
	}
	require.Panics(t, func() { otelmetrics.MustNew(otelmetrics.Config{}) })
}

// TestNilMetricsIsANoOp: a package may keep an optional *Metrics.
func TestNilMetricsIsANoOp(t *testing.T) {
	t.Parallel()
	var m *otelmetrics.Metrics
	ctx := context.Background()
	m.CallOutcome(ctx, observe.Call{})
	m.ShortCircuit(ctx, observe.ShortCircuit{})
	m.BulkheadRejected(ctx, "x")
	m.RetryBudgetExhausted(ctx, "x")
	m.Failover(ctx, observe.Failover{})
	m.RouteServing("m", "r")
	m.FallbackShare(0.5)
	m.JournalPending(1, time.Time{})
	m.ToolAbandoned(ctx, tooltimeout.Abandon{})
	m.Shed(ctx, observe.Shed{})
	m.TransitionDuring(ctx, "x")
	m.Watch(nil)
	m.WatchThrottles(nil)
	m.WatchLimits(nil)
	require.NoError(t, m.Close())
}

// TestRetryHookCountsSpentBudgets: the hook counts an operation the budget stopped,
// once, and nothing else.
func TestRetryHookCountsSpentBudgets(t *testing.T) {
	t.Parallel()
	m, reader := newMetrics(t, otelmetrics.Config{})
	hook := m.RetryHook()
	ctx := context.Background()
	hook(ctx, retry.Event{Dependency: "crm", Stop: retry.ReasonBudgetExhausted})
	hook(ctx, retry.Event{Dependency: "crm", Stop: retry.ReasonBudgetExhausted, Retry: true})
	hook(ctx, retry.Event{Dependency: "crm"})
	require.Equal(t, map[string]float64{"dependency=crm": 1}, collect(t, reader).points(t, "agentbreaker.retry_budget.exhausted"))
}
