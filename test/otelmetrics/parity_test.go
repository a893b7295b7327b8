package otelmetrics_test

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// scriptedLLM answers, or fails with a 503 while fail is set.
type scriptedLLM struct {
	name string
	fail *bool
}

func (l scriptedLLM) Name() string { return l.name }
func (l scriptedLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if *l.fail {
			yield(nil, genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "overloaded"})
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("ok", genai.RoleModel)}, nil)
	}
}

// fanModels hands the failover's measurements to both paths' adapters.
type fanModels []modelfailover.Observer

func (f fanModels) ObserveCall(ctx context.Context, c modelfailover.Call) {
	for _, o := range f {
		o.ObserveCall(ctx, c)
	}
}
func (f fanModels) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	for _, o := range f {
		o.ObserveFailover(ctx, e)
	}
}

// exercise reports one of everything to both paths, from real parts: a dependency map
// whose breakers trip, probe, are forced open and get a longer cooldown, a throttle, an
// adaptive concurrency limit that refuses a call and measures its no-load latency, a
// model failover over two scripted routes, the journal, an abandoned tool call, a call
// shadow mode would have refused and a fleet.
func (b *both) exercise(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	obs := []observe.Observer{b.tel, b.otel.m}
	each := func(f func(o observe.Observer)) {
		for _, o := range obs {
			f(o)
		}
	}
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: b.clk,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}},
			"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{},
				Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 2, MinSamples: 1, UpdateInterval: time.Second}},
			"billing": {Tools: []string{"get_invoice"}, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}},
			"mail":    {Tools: []string{"send_mail"}, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}},
		},
		ModelDefault:  breaker.Policy{MinimumCalls: 1, Jitter: -1},
		OnStateChange: b.listeners(),
	})
	b.tel.Watch(deps)
	b.otel.m.Watch(deps)
	b.tel.WatchThrottles(deps)
	b.otel.m.WatchThrottles(deps)
	b.tel.WatchLimits(deps)
	b.otel.m.WatchLimits(deps)
	b.tel.WatchFleet(stubFleet{})
	b.otel.m.WatchFleet(stubFleet{})

	each(func(o observe.Observer) {
		o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: 30 * time.Millisecond})
		o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: classify.ClassHTTP5xx, Elapsed: 2 * time.Second})
		o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Unknown, Class: "invented_class", Elapsed: 3 * time.Minute})
		o.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
		o.BulkheadRejected(ctx, "crm")
		o.RetryBudgetExhausted(ctx, "crm")
		o.Failover(ctx, observe.Failover{From: "flash@a", To: "flash@b", Cause: "http_429"})
		o.JournalPending(2, epoch.Add(-time.Minute))
	})
	b.tel.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: "export_report", Limit: time.Second, Running: 1})
	b.otel.m.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: "export_report", Limit: time.Second, Running: 1})
	b.tel.WouldRefuse(ctx, "crm", "breaker")
	b.otel.m.WouldRefuse(ctx, "crm", "breaker")

	// billing trips and a user call's probe closes it; mail trips, its probe fails,
	// then an operator forces it open; crm's breaker is asked for a longer pause.
	for _, name := range []string{"billing", "mail"} {
		br, _ := deps.Get(name)
		p, err := br.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	b.clk.Advance(time.Minute)
	billing, _ := deps.Get("billing")
	p, err := billing.Allow()
	require.NoError(t, err)
	p.Success()
	mail, _ := deps.Get("mail")
	p, err = mail.Allow()
	require.NoError(t, err)
	p.Report(breaker.Report{Verdict: breaker.Failure, RetryAfter: 10 * time.Minute})
	mail.ForceOpen("maintenance")
	crm, _ := deps.Get("crm")
	p, err = crm.Allow()
	require.NoError(t, err)
	p.Success()
	search, _ := deps.ForTool("web_search")
	_ = search

	// search's adaptive limit (2, floor 1): two critical calls fill it and a low one is
	// refused; the first ends after 2 s, which measures the no-load latency and,
	// the limit being full, raises it to 3.
	lim := deps.Limiter("search")
	start, end := b.clk.Now().Add(-2*time.Second), b.clk.Now()
	var held []adaptivelimit.Permit
	for range 2 {
		lp, err := lim.AcquireAt(start, throttle.Critical)
		require.NoError(t, err)
		held = append(held, lp)
	}
	_, err = lim.AcquireAt(start, throttle.Low)
	require.ErrorIs(t, err, adaptivelimit.ErrLimited)
	held[0].DoneAt(end)
	held[1].Release()
	require.Equal(t, 3, lim.Limit())
	require.Equal(t, 2*time.Second, lim.NoLoad())

	// A model failover over two scripted routes: the primary fails, its breaker
	// opens, the fallback serves.
	fail := true
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "pro", Region: "a", LLM: scriptedLLM{name: "pro", fail: &fail}},
			{Model: "pro", Region: "b", LLM: scriptedLLM{name: "pro", fail: new(bool)}},
		},
		Breakers: deps, Clock: b.clk, Logger: slog.New(slog.DiscardHandler),
		Observer: fanModels{b.tel.ModelObserver(), b.otel.m.ModelObserver()},
	})
	b.tel.ModelObserver().Watch(f)
	b.otel.m.ModelObserver().Watch(f)
	for range 2 {
		for _, err := range f.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("hi")}, false) {
			require.NoError(t, err)
		}
	}
	b.clk.Advance(5 * time.Second)
}

// TestOTelPathExportsThePrometheusSeries feeds both paths the same reports and compares
// what a scrape shows: every family the telemetry package declares is there on both
// paths with the same type, and every series has the same labels and value (the
// exporter's otel_scope_* labels aside). A metric added to one side only fails here.
func TestOTelPathExportsThePrometheusSeries(t *testing.T) {
	t.Parallel()
	b := newBoth(t, 0, 0)
	b.exercise(t)

	promFamilies := families(t, b.prom)
	require.Equal(t, declaredFamilies(t), slices.Sorted(maps.Keys(promFamilies)),
		"exercise must report every family the telemetry package declares")
	require.Equal(t, promFamilies, families(t, b.otel.reg), "the same families, with the same types")

	want, got := gather(t, b.prom, ""), gather(t, b.otel.reg, "otel_scope_")
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)), "the same series")
	for k, w := range want {
		require.InDelta(t, w.value, got[k].value, 1e-9, k)
	}
	// The exporter labels every series with the adapter's scope.
	for k, s := range gather(t, b.otel.reg, "") {
		require.Equal(t, "github.com/agentbreaker/agentbreaker/telemetry/otelmetrics", s.labels["otel_scope_name"], k)
	}
	t.Logf("%d series compared over %d families", len(want), len(promFamilies))
}

// TestOTelPathFoldsLikePrometheus feeds invented dependency, tool, model and error
// class names, hostile bytes and overlong names included, to both paths with small
// caps: the same series come out, "other" rows and overflow counts included.
func TestOTelPathFoldsLikePrometheus(t *testing.T) {
	t.Parallel()
	b := newBoth(t, 300, 40)
	ctx := context.Background()
	for i := range 500 {
		dep := fmt.Sprintf("dep-%d\x00\xff%s", i, strings.Repeat("é", i%90))
		tool := fmt.Sprintf("invented_tool_%d", i)
		for _, o := range []observe.Observer{b.tel, b.otel.m} {
			o.CallOutcome(ctx, observe.Call{Dependency: dep, Tool: tool, Outcome: classify.Failed, Class: classify.Class(fmt.Sprintf("class_%d", i)), Elapsed: time.Second})
			o.ShortCircuit(ctx, observe.ShortCircuit{Dependency: dep, Tool: tool, State: breaker.Open})
			o.BulkheadRejected(ctx, dep)
			o.RetryBudgetExhausted(ctx, dep)
			o.Failover(ctx, observe.Failover{From: fmt.Sprintf("m%d@r", i), To: "m@s", Cause: fmt.Sprintf("cause_%d", i)})
			o.RouteServing(fmt.Sprintf("model-%d", i), "r")
			o.BreakerEvent(breaker.Event{Breaker: dep, From: breaker.Closed, To: breaker.ForcedOpen, Cause: breaker.CauseOperator, At: b.clk.Now()})
		}
		b.tel.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: tool})
		b.otel.m.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: tool})
	}
	want, got := gather(t, b.prom, ""), gather(t, b.otel.reg, "otel_scope_")
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
	for k, w := range want {
		require.InDelta(t, w.value, got[k].value, 1e-9, k)
	}
	require.Contains(t, got, `agentbreaker_calls_total{dependency="other",error_class="other",outcome="FAILED",tool="other"}`)
	require.Positive(t, got[`agentbreaker_telemetry_series_overflow_total{metric="agentbreaker_calls_total"}`].value)
	bound := otelmetrics.Config{MaxSeries: 300}.SeriesBound()
	require.LessOrEqual(t, len(got), bound)
	t.Logf("%d series on each path (bound %d)", len(got), bound)
}

// limitList is a LimitSource of both paths: its limiters, in order.
type limitList []*adaptivelimit.Limiter

func (l limitList) Limiters() []*adaptivelimit.Limiter { return l }

// TestOTelPathFoldsLimitsLikePrometheus watches the same adaptive limits on both paths
// under a series budget that admits four of them: names with hostile bytes, one named
// "other", two that sanitise alike, some that refused calls or measured a no-load
// latency, and a second source listing a name again. Both paths admit the same
// limits, fold the same ones into dependency="other" with the same values, and a
// second scrape charges nothing more.
func TestOTelPathFoldsLimitsLikePrometheus(t *testing.T) {
	t.Parallel()
	b := newBoth(t, 4*7+3, 0)
	var ls limitList
	for i := range 12 {
		name := fmt.Sprintf("limited-%d\x00\xff", i)
		switch i {
		case 2:
			name = "other"
		case 5:
			name = "limited-1\x01\xfe" // sanitises as limited-1 does
		}
		l := adaptivelimit.MustNew(adaptivelimit.Config{Name: name, MinLimit: 1 + i%3, InitialLimit: 3 + i,
			MinSamples: 1, UpdateInterval: time.Millisecond, Clock: b.clk})
		if i%4 == 1 {
			// A call that took 100·(i+1) ms: the no-load latency.
			p, err := l.AcquireAt(epoch, throttle.Normal)
			require.NoError(t, err)
			p.DoneAt(epoch.Add(time.Duration(i+1) * 100 * time.Millisecond))
		}
		for range i % 3 {
			// Fill the limit with critical calls, then be refused a low one.
			for l.InFlight() < l.Limit() {
				_, err := l.Acquire(throttle.Critical)
				require.NoError(t, err)
			}
			_, err := l.Acquire(throttle.Low)
			require.ErrorIs(t, err, adaptivelimit.ErrLimited)
		}
		ls = append(ls, l)
	}
	again := limitList{adaptivelimit.MustNew(adaptivelimit.Config{Name: "limited-0\x00\xff", MinLimit: 50, InitialLimit: 50})}
	b.tel.WatchLimits(ls)
	b.tel.WatchLimits(again)
	b.otel.m.WatchLimits(ls)
	b.otel.m.WatchLimits(again)
	for range 2 {
		want, got := gather(t, b.prom, ""), gather(t, b.otel.reg, "otel_scope_")
		require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
		for k, w := range want {
			require.InDelta(t, w.value, got[k].value, 1e-9, k)
		}
		limits := 0
		for k := range got {
			if strings.HasPrefix(k, "agentbreaker_adaptive_limit{") {
				limits++
			}
		}
		require.Equal(t, 4+1, limits, "four limits on their own, the rest in other")
		require.Contains(t, got, `agentbreaker_adaptive_limit{dependency="other"}`)
		require.Positive(t, got[`agentbreaker_adaptive_limit_refused_total{dependency="other",priority="low"}`].value)
		require.Positive(t, got[`agentbreaker_adaptive_limit_no_load_seconds{dependency="other"}`].value)
	}
}

// TestSeriesBoundsAgree: both paths promise the same worst case for the same caps.
func TestSeriesBoundsAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		series  int
		buckets []float64
		fleet   bool
	}{{0, nil, false}, {300, nil, true}, {50, []float64{1, 2, 3}, false}} {
		pc := telemetry.Config{MaxSeries: tc.series, DurationBuckets: tc.buckets}
		oc := otelmetrics.Config{MaxSeries: tc.series, DurationBuckets: tc.buckets}
		if tc.fleet {
			pc.Fleet, oc.Fleet = stubFleet{}, stubFleet{}
		}
		require.Equal(t, pc.SeriesBound(), oc.SeriesBound(), "%+v", tc)
	}
	require.Equal(t, telemetry.DefaultSeriesBound, otelmetrics.Config{}.SeriesBound())
	require.Equal(t, telemetry.DefaultMaxSeries, otelmetrics.DefaultMaxSeries)
	require.Equal(t, telemetry.DefaultMaxLabelValues, otelmetrics.DefaultMaxLabelValues)
	require.Equal(t, telemetry.DefaultDurationBuckets, otelmetrics.DefaultDurationBuckets)
	require.Equal(t, telemetry.FleetSeries, otelmetrics.FleetSeries)
	require.Equal(t, telemetry.FleetErrorClasses, otelmetrics.FleetErrorClasses)
}
