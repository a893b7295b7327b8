package otelmetrics_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// fanCalls hands the guard's reports to both paths: the callbacks take one Observer.
type fanCalls []observe.Calls

func (f fanCalls) BreakerEvent(e breaker.Event) {
	for _, o := range f {
		o.BreakerEvent(e)
	}
}
func (f fanCalls) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	for _, o := range f {
		o.ShortCircuit(ctx, s)
	}
}
func (f fanCalls) CallOutcome(ctx context.Context, c observe.Call) {
	for _, o := range f {
		o.CallOutcome(ctx, c)
	}
}
func (f fanCalls) WouldRefuse(ctx context.Context, dep, control string) {
	for _, o := range f {
		o.(observe.Shadow).WouldRefuse(ctx, dep, control)
	}
}
func (f fanCalls) BulkheadRejected(ctx context.Context, dep string) {
	for _, o := range f {
		o.BulkheadRejected(ctx, dep)
	}
}
func (f fanCalls) RetryBudgetExhausted(ctx context.Context, dep string) {
	for _, o := range f {
		o.RetryBudgetExhausted(ctx, dep)
	}
}

var pageFamily = regexp.MustCompile("^\\| `(agentbreaker_[a-z0-9_]+)` \\|")

// pageFamilies reads the Prometheus names of the first table of
// docs/operations-metrics.md (the second table lists the same families by instrument).
func pageFamilies(t *testing.T) []string {
	t.Helper()
	page, err := os.ReadFile("../../docs/operations-metrics.md")
	require.NoError(t, err)
	var out []string
	for line := range strings.SplitSeq(string(page), "\n") {
		if m := pageFamily.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	require.Greater(t, len(out), 30, "the page's table")
	return out
}

// redisAddr is the Redis of AGENTBREAKER_REDIS_ADDR (default 127.0.0.1:6379), or ""
// when nothing answers there.
func redisAddr(t *testing.T) string {
	addr := cmp.Or(os.Getenv("AGENTBREAKER_REDIS_ADDR"), "127.0.0.1:6379")
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		t.Logf("no Redis at %s (%v): the fleet is left out", addr, err)
		return ""
	}
	_ = c.Close()
	return addr
}

// app is everything an operator configures: a dependency map with a throttle and an
// adaptive limit, a model failover over the map's breakers, a retrier, a journal on
// SQLite and, when Redis answers, a fleet. None of them is given a telemetry listener,
// hook or observer: Parts hands them to Wire.
type app struct {
	deps     *dependencymap.Map
	failover *modelfailover.Failover
	retrier  *retry.Retrier
	fail     *bool
	parts    telemetry.Parts
}

func newApp(t *testing.T, b *both, cfg dependencymap.Config, cfgRetry retry.Config, obs modelfailover.Observer) *app {
	t.Helper()
	cfg.Clock = b.clk
	if cfg.Dependencies == nil {
		cfg.Dependencies = map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 2, Cooldown: 30 * time.Second, Jitter: -1}},
			"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{},
				Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 2, MinSamples: 1, UpdateInterval: time.Second}},
		}
	}
	cfg.ModelDefault = breaker.Policy{MinimumCalls: 1, Jitter: -1}
	deps := dependencymap.MustNew(cfg)
	a := &app{deps: deps, fail: new(bool)}
	*a.fail = true
	a.failover = modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "pro", Region: "a", LLM: scriptedLLM{name: "pro", fail: a.fail}},
			{Model: "pro", Region: "b", LLM: scriptedLLM{name: "pro", fail: new(bool)}},
		},
		Breakers: deps, Clock: b.clk, Logger: slog.New(slog.DiscardHandler), Observer: obs,
	})
	cfgRetry.Clock = b.clk
	cfgRetry.Budgets = retry.MustNewBudgets(retry.BudgetConfig{Clock: b.clk, MinRetriesPerSecond: -1})
	a.retrier = retry.MustNew(cfgRetry)
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}, Clock: b.clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	a.parts = telemetry.Parts{Dependencies: deps, Failover: a.failover, Journal: j, Retrier: a.retrier}
	return a
}

// exhaust runs one operation whose budget refuses its retry.
func (a *app) exhaust(t *testing.T) {
	t.Helper()
	res := a.retrier.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "lookup_customer"},
		func(context.Context, retry.Info) (classify.Classification, error) {
			return classify.ForClass(classify.ClassConnectionRefused), errors.New("connection refused")
		})
	require.Equal(t, retry.ReasonBudgetExhausted, res.Reason)
}

// failOver makes two model calls: the primary fails, its breaker opens, the fallback
// serves.
func (a *app) failOver(t *testing.T) {
	t.Helper()
	for range 2 {
		for _, err := range a.failover.GenerateContent(t.Context(), &model.LLMRequest{Contents: genai.Text("hi")}, false) {
			require.NoError(t, err)
		}
	}
}

// TestOneWireExportsEveryFamily configures every feature, makes one Wire call on each
// path, drives an incident through adk-go's runner, a failover, a spent retry budget and
// a journal, and finds every family of docs/operations-metrics.md's table in both
// scrapes (the fleet's only when Redis answers).
func TestOneWireExportsEveryFamily(t *testing.T) {
	b := newBoth(t, 0, 0)
	a := newApp(t, b, dependencymap.Config{}, retry.Config{}, nil)
	want := pageFamilies(t)
	join := func() {}
	if addr := redisAddr(t); addr != "" {
		f, err := fleet.New(fleet.Config{Addr: addr, App: fmt.Sprintf("t-wire-%d", time.Now().UnixNano()), Prefix: "abtest",
			SyncInterval: 100 * time.Millisecond, OpTimeout: 80 * time.Millisecond, LocalAfter: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		a.parts.Fleet = f
		// The map joins the fleet after the breaker's story below: syncs on the real
		// clock beside the fake-clock probe made the check after it flaky once in CI.
		join = func() { require.NoError(t, f.AttachMap(a.deps)) }
	} else {
		want = slices.DeleteFunc(want, func(n string) bool { return strings.HasPrefix(n, "agentbreaker_fleet_") })
	}

	// The one call, on each path.
	b.tel.Wire(a.parts)
	b.otel.m.Wire(a.parts)

	// The guard, given the observers as every guard is: the calls it reports.
	cb := callbacks.MustNew(callbacks.Config{Dependencies: a.deps, Clock: b.clk,
		Observability: callbacks.Observability{Observer: fanCalls{b.tel, b.otel.m}}})
	server := breakertest.NewServer(t)
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup_customer", URL: server.URL,
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	require.NoError(t, err)
	n := 0
	llm := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		n++
		return breakertest.Calls(&genai.FunctionCall{ID: fmt.Sprintf("wire-%d", n), Name: "lookup_customer", Args: map[string]any{"query": "C-1"}})
	}})
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Tools: []tool.Tool{lookup}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	turn := func() {
		_, err := h.Run(context.Background(), sid, "Who is C-1?")
		require.NoError(t, err)
	}
	server.Set(breakertest.Status(http.StatusServiceUnavailable))
	turn()
	turn() // trips crm
	crm, _ := a.deps.Get("crm")
	require.Equal(t, breaker.Open, crm.State())
	turn() // short-circuited
	// The probe, straight on the breaker: the families need one settled probe, not
	// the runner's timing.
	b.clk.Advance(crm.RetryAfter() + time.Second)
	p, err := crm.Allow()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, breaker.Closed, crm.State())

	a.failOver(t)
	a.exhaust(t)
	// Shadow mode: the crm breaker, opened again and put in shadow mode while the agent
	// runs, lets the next call through and says it would have refused it.
	server.Set(breakertest.Status(http.StatusServiceUnavailable))
	crm.ForceOpen("shadow test")
	p2 := crm.Policy()
	p2.Shadow = true
	require.NoError(t, crm.SetPolicy(p2))
	turn()
	join()

	prom, otel := families(t, b.prom), families(t, b.otel.reg)
	for _, name := range want {
		require.Contains(t, prom, name, "the Prometheus scrape lacks %s", name)
		require.Contains(t, otel, name, "the OpenTelemetry scrape lacks %s", name)
	}
	t.Logf("%d families on each path after one Wire", len(want))
}

// TestWireBesideTheOldCallsCountsOnce gives every part the listener, hook and observer
// of the calls Wire replaces, and wires it twice more: a trip, a failover and a spent
// budget are each counted once on both paths.
func TestWireBesideTheOldCallsCountsOnce(t *testing.T) {
	b := newBoth(t, 0, 0)
	a := newApp(t, b, dependencymap.Config{OnStateChange: b.listeners()},
		retry.Config{OnAttempt: []func(context.Context, retry.Event){telemetry.RetryHook(b.tel), b.otel.m.RetryHook()}},
		fanModels{b.tel.ModelObserver(), b.otel.m.ModelObserver()})
	b.tel.Watch(a.deps)
	b.otel.m.Watch(a.deps)
	for range 2 {
		b.tel.Wire(a.parts)
		b.otel.m.Wire(a.parts)
	}
	crm, _ := a.deps.Get("crm")
	for range 2 {
		p, err := crm.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Open, crm.State())
	a.failOver(t)
	a.exhaust(t)

	for name, g := range map[string]map[string]sample{"prometheus": gather(t, b.prom, ""), "opentelemetry": gather(t, b.otel.reg, "otel_scope_")} {
		require.Equal(t, 1.0, g[`agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="crm",from="closed",to="open"}`].value, name)
		require.Equal(t, 1.0, g[`agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="pro@a",from="closed",to="open"}`].value, name)
		require.Equal(t, 1.0, g[`agentbreaker_retry_budget_exhausted_total{dependency="crm"}`].value, name)
		require.Equal(t, 1.0, g[`agentbreaker_model_failovers_total{cause="http_5xx",from="pro@a",to="pro@b"}`].value, name)
	}
}

// TestWireReadsLaterKeysAndNothingElse wires a map alone: a key the map adds after Wire
// reports without another call, and the parts not given (no throttle, limit, failover,
// fleet or journal) export no family.
func TestWireReadsLaterKeysAndNothingElse(t *testing.T) {
	b := newBoth(t, 0, 0)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: b.clk,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}}})
	b.tel.Wire(telemetry.Parts{Dependencies: deps})
	b.otel.m.Wire(telemetry.Parts{Dependencies: deps})
	require.NoError(t, deps.AddTools("payments", "charge"))
	pay, _ := deps.Get("payments")
	p, err := pay.Allow()
	require.NoError(t, err)
	p.Failure() // the default policy needs more calls: no trip, but a window count

	for name, g := range map[string]map[string]sample{"prometheus": gather(t, b.prom, ""), "opentelemetry": gather(t, b.otel.reg, "otel_scope_")} {
		require.Equal(t, 1.0, g[`agentbreaker_breaker_state{dependency="payments",state="closed"}`].value, name)
		require.Equal(t, 1.0, g[`agentbreaker_breaker_window_failed_calls{dependency="payments"}`].value, name)
		require.Contains(t, g, `agentbreaker_tool_calls_abandoned_total{tool="charge"}`, name)
		for k := range g {
			for _, absent := range []string{"agentbreaker_throttle_", "agentbreaker_adaptive_", "agentbreaker_fleet_", "agentbreaker_journal_", "agentbreaker_model_"} {
				require.False(t, strings.HasPrefix(k, absent), "%s: %s without its part", name, k)
			}
		}
	}
}

// growingSource is a map whose throttles and limits grow after it was wired, as a
// dependency map's would if it gained a throttled key: the collection reads the lists
// at every scrape.
type growingSource struct {
	mu        sync.Mutex
	throttles []*throttle.Throttle
	limits    []*adaptivelimit.Limiter
}

func (g *growingSource) Throttles() []*throttle.Throttle {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.throttles)
}

func (g *growingSource) Limiters() []*adaptivelimit.Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.limits)
}

// TestWatchedThrottlesAndLimitsAreReadAtScrape watches a source before it has any
// throttle or limit, then adds one of each: both report on both paths without another
// call. (A dependency map builds its throttles and limits in New; this is what makes a
// map that gains one later report it.)
func TestWatchedThrottlesAndLimitsAreReadAtScrape(t *testing.T) {
	b := newBoth(t, 0, 0)
	src := &growingSource{}
	b.tel.WatchThrottles(src)
	b.tel.WatchLimits(src)
	b.otel.m.WatchThrottles(src)
	b.otel.m.WatchLimits(src)
	require.NotContains(t, families(t, b.prom), "agentbreaker_throttle_shed_total")

	th, err := throttle.New(throttle.Config{Name: "search", Clock: b.clk})
	require.NoError(t, err)
	lim, err := adaptivelimit.New(adaptivelimit.Config{Name: "search", Clock: b.clk})
	require.NoError(t, err)
	src.mu.Lock()
	src.throttles, src.limits = append(src.throttles, th), append(src.limits, lim)
	src.mu.Unlock()

	for name, g := range map[string]map[string]sample{"prometheus": gather(t, b.prom, ""), "opentelemetry": gather(t, b.otel.reg, "otel_scope_")} {
		require.Contains(t, g, `agentbreaker_throttle_shed_share{dependency="search"}`, name)
		require.Contains(t, g, `agentbreaker_throttle_shed_total{dependency="search",priority="low"}`, name)
		require.Contains(t, g, `agentbreaker_adaptive_limit{dependency="search"}`, name)
		require.Contains(t, g, `agentbreaker_adaptive_limit_refused_total{dependency="search",priority="critical"}`, name)
	}
}
