package telemetry_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

func TestPushedSignals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.tel.CallOutcome(ctx, observe.Call{Dependency: "gemini-2.5-pro@us-central1", Outcome: classify.Unknown, Class: classify.ClassHTTP5xx, Elapsed: 2 * time.Second})
	f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: 50 * time.Millisecond})
	f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: "quota_exceeded", Elapsed: 500 * time.Millisecond})
	f.tel.BulkheadRejected(ctx, "crm")
	f.tel.BulkheadRejected(ctx, "crm")
	f.tel.RetryBudgetExhausted(ctx, "")
	f.tel.Failover(ctx, observe.Failover{From: "gemini-2.5-pro@us-central1", To: "gemini-2.5-pro@europe-west4", Cause: "http_5xx"})
	f.tel.RouteServing("gemini-2.5-pro", "us-central1")
	f.tel.RouteServing("gemini-2.5-pro", "europe-west4")
	f.tel.FallbackShare(0.25)
	f.tel.FallbackShare(1.5) // ignored and logged
	f.tel.JournalPending(3, start.Add(-10*time.Minute))
	f.tel.JournalPending(-1, time.Time{}) // ignored and logged
	f.clock.Advance(5 * time.Minute)

	f.compare(t, `
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="crm",error_class="none",outcome="SUCCEEDED",tool="lookup_customer"} 1
agentbreaker_calls_total{dependency="crm",error_class="quota_exceeded",outcome="FAILED",tool="lookup_customer"} 1
agentbreaker_calls_total{dependency="gemini-2.5-pro@us-central1",error_class="http_5xx",outcome="UNKNOWN",tool=""} 1
# HELP agentbreaker_call_duration_seconds Duration of guarded calls sent to their dependency, by classified outcome.
# TYPE agentbreaker_call_duration_seconds histogram
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="FAILED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="FAILED",le="1"} 1
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="FAILED",le="+Inf"} 1
agentbreaker_call_duration_seconds_sum{dependency="crm",outcome="FAILED"} 0.5
agentbreaker_call_duration_seconds_count{dependency="crm",outcome="FAILED"} 1
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="SUCCEEDED",le="0.1"} 1
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="SUCCEEDED",le="1"} 1
agentbreaker_call_duration_seconds_bucket{dependency="crm",outcome="SUCCEEDED",le="+Inf"} 1
agentbreaker_call_duration_seconds_sum{dependency="crm",outcome="SUCCEEDED"} 0.05
agentbreaker_call_duration_seconds_count{dependency="crm",outcome="SUCCEEDED"} 1
agentbreaker_call_duration_seconds_bucket{dependency="gemini-2.5-pro@us-central1",outcome="UNKNOWN",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="gemini-2.5-pro@us-central1",outcome="UNKNOWN",le="1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="gemini-2.5-pro@us-central1",outcome="UNKNOWN",le="+Inf"} 1
agentbreaker_call_duration_seconds_sum{dependency="gemini-2.5-pro@us-central1",outcome="UNKNOWN"} 2
agentbreaker_call_duration_seconds_count{dependency="gemini-2.5-pro@us-central1",outcome="UNKNOWN"} 1
# HELP agentbreaker_bulkhead_rejections_total Calls refused because the dependency's bulkhead was full.
# TYPE agentbreaker_bulkhead_rejections_total counter
agentbreaker_bulkhead_rejections_total{dependency="crm"} 2
# HELP agentbreaker_retry_budget_exhausted_total Retries refused because the dependency's retry budget was spent.
# TYPE agentbreaker_retry_budget_exhausted_total counter
agentbreaker_retry_budget_exhausted_total{dependency="unknown"} 1
# HELP agentbreaker_model_failovers_total Model calls moved from one route (model@region) to the next, by cause.
# TYPE agentbreaker_model_failovers_total counter
agentbreaker_model_failovers_total{cause="http_5xx",from="gemini-2.5-pro@us-central1",to="gemini-2.5-pro@europe-west4"} 1
# HELP agentbreaker_model_route_serving 1 for the model route serving calls now, 0 for routes that served before.
# TYPE agentbreaker_model_route_serving gauge
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="europe-west4"} 1
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="us-central1"} 0
# HELP agentbreaker_model_fallback_ratio Share of recent turns served by a model route other than the primary one, as reported by the failover wrapper.
# TYPE agentbreaker_model_fallback_ratio gauge
agentbreaker_model_fallback_ratio 0.25
# HELP agentbreaker_journal_pending_intents Journal intents whose outcome is unknown and that await reconciliation.
# TYPE agentbreaker_journal_pending_intents gauge
agentbreaker_journal_pending_intents 3
# HELP agentbreaker_journal_oldest_pending_age_seconds Age of the oldest journal intent awaiting reconciliation; 0 when none waits.
# TYPE agentbreaker_journal_oldest_pending_age_seconds gauge
agentbreaker_journal_oldest_pending_age_seconds 900
`, "agentbreaker_calls_total", "agentbreaker_call_duration_seconds", "agentbreaker_bulkhead_rejections_total",
		"agentbreaker_retry_budget_exhausted_total", "agentbreaker_model_failovers_total", "agentbreaker_model_route_serving",
		"agentbreaker_model_fallback_ratio", "agentbreaker_journal_pending_intents", "agentbreaker_journal_oldest_pending_age_seconds")

	require.Len(t, f.logs.withMsg(t, "agentbreaker: FallbackShare outside [0, 1]; ignored"), 1)
	require.Len(t, f.logs.withMsg(t, "agentbreaker: JournalPending with a negative count; ignored"), 1)
	require.Len(t, f.logs.withMsg(t, "agentbreaker: model route serving"), 2)

	// Once the journal drains, the age reads 0 again.
	f.tel.JournalPending(0, time.Time{})
	f.compare(t, `
# HELP agentbreaker_journal_oldest_pending_age_seconds Age of the oldest journal intent awaiting reconciliation; 0 when none waits.
# TYPE agentbreaker_journal_oldest_pending_age_seconds gauge
agentbreaker_journal_oldest_pending_age_seconds 0
`, "agentbreaker_journal_oldest_pending_age_seconds")
}

func TestGaugesNobodyPushedAreAbsent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n, err := testutil.GatherAndCount(f.reg, "agentbreaker_journal_pending_intents", "agentbreaker_model_fallback_ratio", "agentbreaker_journal_oldest_pending_age_seconds")
	require.NoError(t, err)
	require.Zero(t, n, "a 0 before the journal or the failover wrapper reported would claim a health nobody measured")
}

// adkContext stands in for adk-go's agent.Context, which has these two methods; the

// runner test in trace_test.go checks the real one.

type adkContext struct {
	context.Context
	invocation, call string
}

func (c adkContext) InvocationID() string { return c.invocation }

func (c adkContext) FunctionCallID() string { return c.call }

func TestLogRecordsCarryStableKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		PolicyVersion: "2026-11-v3",
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	f.tel.Watch(deps)
	ctx := adkContext{Context: context.Background(), invocation: "e-42", call: "adk-7"}

	f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", Attempt: 2, State: breaker.Open, RetryAfter: 1500 * time.Millisecond})
	f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", RequestID: "req-explicit", Outcome: classify.Unknown, Class: classify.ClassTimeout, Elapsed: 1250 * time.Millisecond, Probe: true})
	f.tel.Failover(ctx, observe.Failover{From: "gemini@a", To: "gemini@b", Cause: "http_429"})

	sc := f.logs.withMsg(t, "agentbreaker: call short-circuited")
	require.Len(t, sc, 1)
	require.Subset(t, sc[0], map[string]any{
		"level": "INFO", "dependency": "crm", "tool": "lookup_customer", "request_id": "e-42", "function_call_id": "adk-7",
		"attempt": 2.0, "outcome": "FAILED_BEFORE_SEND", "error_class": "breaker_open", "breaker_state": "closed",
		"policy_version": "2026-11-v3", "retry_after_ms": 1500.0,
	})
	at := f.logs.withMsg(t, "agentbreaker: call attempt")
	require.Len(t, at, 1)
	require.Subset(t, at[0], map[string]any{
		"level": "INFO", "dependency": "crm", "request_id": "req-explicit", "function_call_id": "adk-7", "attempt": 1.0,
		"outcome": "UNKNOWN", "error_class": "timeout", "elapsed_ms": 1250.0, "breaker_state": "closed",
		"policy_version": "2026-11-v3", "probe": true,
	})
	fo := f.logs.withMsg(t, "agentbreaker: model failover")
	require.Len(t, fo, 1)
	require.Subset(t, fo[0], map[string]any{"level": "WARN", "from": "gemini@a", "to": "gemini@b", "cause": "http_429", "request_id": "e-42"})
	for _, r := range f.logs.records(t) {
		for _, key := range []string{"session_id", "user_id"} {
			require.NotContains(t, r, key)
		}
	}
}

func TestSuccessfulAttemptsLogAtDebug(t *testing.T) {
	t.Parallel()
	logs := &logSink{}
	tel := telemetry.MustNew(telemetry.Config{
		Registerer: prometheus.NewRegistry(),
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)), // info and above
	})
	tel.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Outcome: classify.Succeeded})
	require.Empty(t, logs.records(t))
	tel.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Outcome: classify.Failed, Class: classify.ClassHTTP4xx})
	require.Len(t, logs.records(t), 1)
}

func TestLabelValuesAreCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *telemetry.Config) { c.MaxLabelValues = 2 })
	ctx := context.Background()
	for _, tool := range []string{"a", "b", "invented_by_the_model", "another_invention", "a", "bad\xffutf8"} {
		f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: tool, State: breaker.Open})
	}
	f.compare(t, `
# HELP agentbreaker_short_circuits_total Calls answered locally because their breaker did not admit them, by the state that rejected them.
# TYPE agentbreaker_short_circuits_total counter
agentbreaker_short_circuits_total{dependency="crm",state="open",tool="a"} 2
agentbreaker_short_circuits_total{dependency="crm",state="open",tool="b"} 1
agentbreaker_short_circuits_total{dependency="crm",state="open",tool="other"} 3
`, "agentbreaker_short_circuits_total")
	warnings := f.logs.withMsg(t, `agentbreaker: metric label has too many values; folding new ones into "other"`)
	require.Len(t, warnings, 1, "the overflow is logged once, not once per call")
	require.Equal(t, "tool", warnings[0]["label"])
}

func TestInvalidUTF8LabelIsRepaired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.tel.BulkheadRejected(context.Background(), "crm\xff")
	f.compare(t, `
# HELP agentbreaker_bulkhead_rejections_total Calls refused because the dependency's bulkhead was full.
# TYPE agentbreaker_bulkhead_rejections_total counter
agentbreaker_bulkhead_rejections_total{dependency="crm`+"\uFFFD"+`"} 1
`, "agentbreaker_bulkhead_rejections_total")
}

// TestConcurrentReportsAndScrapes runs every method from many goroutines while scraping,
// for the race detector, and checks that no report was lost.
func TestConcurrentReportsAndScrapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock:         f.clock,
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"t0", "t1", "t2"}, Policy: breaker.Policy{MinimumCalls: 5, Jitter: -1}}},
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent},
	})
	f.tel.Watch(deps)
	const workers, perWorker = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			tool := []string{"t0", "t1", "t2"}[w%3]
			b, _ := deps.ForTool(tool)
			for i := range perWorker {
				if p, err := b.Allow(); err == nil {
					if i%2 == 0 {
						p.Failure()
					} else {
						p.Success()
					}
				}
				f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: tool, Outcome: classify.Succeeded, Elapsed: time.Millisecond})
				f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: tool, State: breaker.Open})
				f.tel.RouteServing("m", []string{"a", "b"}[i%2])
				f.tel.JournalPending(i, start)
				if i%50 == 0 {
					b.Reset("test")
				}
			}
		})
	}
	for range 20 {
		_, err := f.reg.Gather()
		require.NoError(t, err)
	}
	wg.Wait()
	require.Equal(t, float64(workers*perWorker), sumCounter(t, f.reg, "agentbreaker_calls_total"))
	require.Equal(t, float64(workers*perWorker), sumCounter(t, f.reg, "agentbreaker_short_circuits_total"))
	families, err := f.reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() == "agentbreaker_model_route_serving" {
			ones := 0
			for _, m := range mf.GetMetric() {
				if m.GetGauge().GetValue() == 1 {
					ones++
				}
			}
			require.Equal(t, 1, ones, "exactly one route serves")
		}
	}
}

// sumCounter adds up every series of a counter family.

func sumCounter(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, mf := range families {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
