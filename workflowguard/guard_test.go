package workflowguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

var start = time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)

// policy trips after five calls of which half failed, and stays open 30 s.
var policy = breaker.Policy{MinimumCalls: 5, FailureRateThreshold: 0.5, Cooldown: 30 * time.Second, Jitter: -1}

// graph is START -> prep -> lookup -> report, the shape of Found 2 in issue 33: prep
// builds the lookup's arguments, lookup calls the CRM over HTTP, report writes what
// it got. A refusal routes lookup to fallback instead when routed is set.
type graph struct {
	h        *breakertest.Harness
	server   *breakertest.Server
	deps     *dependencymap.Map
	cb       *callbacks.Callbacks
	clk      *clock.Fake
	reports  atomic.Int64
	fallback atomic.Int64
	last     atomic.Value // the response_type or status the report last saw
}

type graphConfig struct {
	guarded     bool // workflowguard.New, else workflow.NewToolNode
	maxAttempts int
	retrier     bool     // Config.SideEffects.Retry
	mutating    []string // Config.SideEffects.MutatingTools
	routed      bool     // refusals go to a fallback node
	plugin      bool
}

func newGraph(t *testing.T, gc graphConfig) *graph {
	t.Helper()
	g := &graph{server: breakertest.NewServer(t), clk: clock.NewFake(start)}
	g.server.Set(breakertest.Status(http.StatusServiceUnavailable))
	g.deps = dependencymap.MustNew(dependencymap.Config{Clock: g.clk, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"crm_lookup"}, Policy: policy},
	}})
	cfg := callbacks.Config{Dependencies: g.deps, Clock: g.clk}
	cfg.SideEffects.MutatingTools = gc.mutating
	if gc.retrier {
		cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: g.clk, Sleeper: &retry.FakeSleeper{}})
	}
	g.cb = callbacks.MustNew(cfg)
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: g.server.URL, TypedErrors: true})
	require.NoError(t, err)
	// adk-go's scheduler waits with a real time.AfterFunc between retries: no delay.
	nc := workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: gc.maxAttempts}}
	var node workflow.Node
	if gc.guarded {
		node, err = workflowguard.New(workflowguard.Config{Callbacks: g.cb, Tool: lookup, Node: nc})
	} else {
		node, err = workflow.NewToolNode(lookup, nc)
	}
	require.NoError(t, err)
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	report := workflow.NewFunctionNode("report", func(_ agent.Context, in map[string]any) (string, error) {
		g.reports.Add(1)
		rt, _ := in[payloads.KeyResponseType].(string)
		g.last.Store(rt)
		if s, _ := in[payloads.KeyStatus].(string); s != "" {
			return "report: the CRM is " + s, nil
		}
		return "report: done", nil
	}, workflow.NodeConfig{})
	fallback := workflow.NewFunctionNode("fallback", func(agent.Context, map[string]any) (string, error) {
		g.fallback.Add(1)
		return "report: from the cache", nil
	}, workflow.NodeConfig{})
	edges := workflow.Chain(workflow.Start, prep, node)
	if gc.routed {
		edges = append(edges, workflow.Edge{From: node, To: fallback, Route: workflowguard.Refused},
			workflow.Edge{From: node, To: report, Route: workflow.Default})
	} else {
		edges = append(edges, workflow.Edge{From: node, To: report})
	}
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: edges})
	require.NoError(t, err)
	var plugins []*plugin.Plugin
	if gc.plugin {
		plugins = []*plugin.Plugin{g.cb.Plugin()}
	}
	g.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: plugins})
	return g
}

// run runs one turn and reports whether it ended with an error.
func (g *graph) run(t *testing.T) error {
	t.Helper()
	sid, err := g.h.NewSession(context.Background())
	require.NoError(t, err)
	_, err = g.h.Run(context.Background(), sid, "report on acme")
	return err
}

// Found 2 of issue 33: a plain tool node calls the dead CRM five times on every run and
// fails the run; the guarded node sends the volume gate's five, then none, and every
// run reaches its report.
func TestToolNodeFailsFastAndEveryRunReports(t *testing.T) {
	t.Parallel()
	const runs = 8
	t.Run("plain tool node", func(t *testing.T) {
		t.Parallel()
		g := newGraph(t, graphConfig{maxAttempts: 5, plugin: true})
		failed := 0
		for range runs {
			if g.run(t) != nil {
				failed++
			}
		}
		require.Equal(t, int64(5*runs), g.server.Requests(), "every run retries the node five times")
		require.Equal(t, runs, failed)
		require.Zero(t, g.reports.Load())
		b, _ := g.deps.Get("crm")
		require.Zero(t, b.Snapshot().Window.Calls, "no outcome reached the breaker")
	})
	t.Run("guarded tool node", func(t *testing.T) {
		t.Parallel()
		g := newGraph(t, graphConfig{guarded: true, maxAttempts: 5, plugin: true})
		for range runs {
			require.NoError(t, g.run(t))
		}
		require.Equal(t, int64(policy.MinimumCalls), g.server.Requests(), "the volume gate's calls, then none")
		require.Equal(t, int64(runs), g.reports.Load(), "every run reached its report")
		require.Equal(t, payloads.TypeUnavailable, g.last.Load(), "runs after the trip got the unavailable payload")
		b, _ := g.deps.Get("crm")
		require.Equal(t, breaker.Open, b.State())
		require.Zero(t, g.cb.Stats().InFlight)
		require.Zero(t, g.cb.Stats().Invocations, "the plugin freed every run's state")

		// After the cooldown the next run's call is the probe: one request.
		g.clk.Advance(policy.Cooldown)
		g.server.Set(breakertest.OK(`{"id": 1}`))
		require.NoError(t, g.run(t))
		require.Equal(t, int64(policy.MinimumCalls+1), g.server.Requests())
		require.Equal(t, breaker.Closed, b.State())
	})
}

// A refusal is a node result the graph branches on, not an error the scheduler
// retries: with a route on workflowguard.Refused, refused runs go to the fallback.
func TestRefusalIsARouteNotARetry(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{guarded: true, maxAttempts: 5, routed: true, plugin: true})
	b, _ := g.deps.Get("crm")
	b.ForceOpen("test")
	for range 3 {
		require.NoError(t, g.run(t))
	}
	require.Zero(t, g.server.Requests())
	require.Equal(t, int64(3), g.fallback.Load(), "each refusal took the Refused route")
	require.Zero(t, g.reports.Load())
}

// ShouldRetry refuses a node retry once the breaker refuses calls: with a volume gate
// of three, the third failure trips it and the fourth and fifth attempts never go.
func TestNodeRetryRefusedWhileBreakerOpen(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{guarded: true, maxAttempts: 5, plugin: true})
	b, _ := g.deps.Get("crm")
	for range 2 { // two calls already in the window: two failures, closed
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Closed, b.State())
	require.NoError(t, g.run(t))
	require.Equal(t, int64(3), g.server.Requests(), "the third attempt tripped the breaker: no fourth")
	require.Equal(t, int64(1), g.reports.Load())
	// Not retried into a short-circuit: the node ended on the third failure itself.
	require.Equal(t, payloads.TypeFailed, g.last.Load())
}

// With the retry budget, each node retry is the operation's next attempt: the budget's
// floor (one retry per 10 s window) lets one through, and the node stops there.
func TestNodeRetryRefusedWhenBudgetSpent(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{guarded: true, maxAttempts: 5, retrier: true, plugin: true})
	require.NoError(t, g.run(t))
	require.Equal(t, int64(2), g.server.Requests(), "the first attempt and the budget's one retry")
	require.Equal(t, int64(1), g.reports.Load())
	require.Equal(t, payloads.TypeFailed, g.last.Load(), "the last failure reached the report as the failed payload")
}

// An UNKNOWN outcome of a mutation is never retried by the scheduler: the connection
// drops after the request was written, the node completes with the outcome-unknown
// payload, one request.
func TestNodeRetryRefusedAfterUnknownMutation(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{guarded: true, maxAttempts: 5, mutating: []string{"crm_lookup"}, plugin: true})
	g.server.Set(breakertest.Drop())
	require.NoError(t, g.run(t))
	require.Equal(t, int64(1), g.server.Requests(), "written once, never repeated")
	require.Equal(t, int64(1), g.reports.Load())
	require.Equal(t, payloads.TypeOutcomeUnknown, g.last.Load(), "the report got the outcome-unknown payload")
}

// FailuresAsErrors keeps adk-go's behaviour for a failure that will not be retried:
// the run fails, with an error that names the dependency and not the tool's text.
func TestFailuresAsErrors(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{plugin: true})
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: g.server.URL, TypedErrors: true})
	require.NoError(t, err)
	n, err := workflowguard.New(workflowguard.Config{Callbacks: g.cb, Tool: lookup, FailuresAsErrors: true})
	require.NoError(t, err)
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, n)})
	require.NoError(t, err)
	g.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{g.cb.Plugin()}})
	err = g.run(t)
	var we *workflowguard.Error
	require.ErrorAs(t, err, &we)
	require.Equal(t, "crm", we.Dependency)
	require.Contains(t, err.Error(), `dependency "crm" failed`)
	require.Equal(t, int64(1), g.server.Requests())
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{})
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: g.server.URL})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		cfg  workflowguard.Config
		want string
	}{
		{name: "no callbacks", cfg: workflowguard.Config{Tool: lookup}, want: "workflowguard: Callbacks = nil"},
		{name: "no tool", cfg: workflowguard.Config{Callbacks: g.cb}, want: "workflowguard: Tool = nil"},
		{name: "negative timeout", cfg: workflowguard.Config{Callbacks: g.cb, Tool: lookup, Timeout: -time.Second}, want: "workflowguard: Timeout = -1s"},
		{name: "negative attempts", cfg: workflowguard.Config{Callbacks: g.cb, Tool: lookup, Node: workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: -1}}},
			want: "workflowguard: Node.RetryConfig.MaxAttempts = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workflowguard.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Panics(t, func() { workflowguard.MustNew(tc.cfg) })
		})
	}
}

// The predicate itself, on a real failure: no retry while the breaker refuses calls,
// the node's own predicate after that, adk-go's default without one.
func TestShouldRetryAsksTheBreaker(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{plugin: true})
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: g.server.URL, TypedErrors: true})
	require.NoError(t, err)
	n := workflowguard.MustNew(workflowguard.Config{Callbacks: g.cb, Tool: lookup, FailuresAsErrors: true})
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, n)})
	require.NoError(t, err)
	g.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{g.cb.Plugin()}})
	failure := g.run(t)
	require.Error(t, failure)

	should := workflowguard.ShouldRetry(nil)
	require.True(t, should(failure), "closed breaker, read-only tool: retry")
	b, _ := g.deps.Get("crm")
	b.ForceOpen("test")
	require.False(t, should(failure), "the breaker refuses calls")
	b.Reset("test")
	require.True(t, should(failure))
	require.False(t, workflowguard.ShouldRetry(func(error) bool { return false })(failure), "the node's own predicate still decides")
	require.False(t, should(workflow.ErrInputValidation), "adk-go's default")
	require.True(t, should(errors.New("other")))
}

// Found 2's second case: the tool's HTTP client on httptransport, which refuses the
// request itself while the breaker is open. Through the guarded node the refusal is a
// node result, not five local retries and a failed run: no request, and the run reports.
func TestTransportRefusalIsAResultNotANodeRetry(t *testing.T) {
	t.Parallel()
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(http.StatusServiceUnavailable))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	clk := clock.NewFake(start)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Hosts: []string{u.Host}, Policy: policy},
	}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk})
	tries := &countingTransport{next: httptransport.MustNew(httptransport.Config{Map: deps, Clock: clk})}
	client := &http.Client{Transport: tries}
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: srv.URL, Client: client, TypedErrors: true})
	require.NoError(t, err)
	n := workflowguard.MustNew(workflowguard.Config{Callbacks: cb, Tool: lookup,
		Node: workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: 5}}})
	var reports atomic.Int64
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	report := workflow.NewFunctionNode("report", func(agent.Context, map[string]any) (string, error) {
		reports.Add(1)
		return "report", nil
	}, workflow.NodeConfig{})
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, n, report)})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	b, _ := deps.Get("crm")
	b.ForceOpen("test")
	for range 3 {
		sid, err := h.NewSession(context.Background())
		require.NoError(t, err)
		_, err = h.Run(context.Background(), sid, "report on acme")
		require.NoError(t, err)
	}
	require.Zero(t, srv.Requests())
	require.Equal(t, int64(3), tries.n.Load(), "one try per run: the transport's refusal is not retried")
	require.Equal(t, int64(3), reports.Load(), "every run reached its report")
}

// countingTransport counts the round trips the tool's client asks for.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// One node runs in many invocations at once (each its own session): every run is
// answered, the breaker sees every call once and gives every permit back.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	g := newGraph(t, graphConfig{guarded: true, maxAttempts: 3, retrier: true, plugin: true})
	const runs = 16
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for range runs {
		wg.Go(func() {
			sid, err := g.h.NewSession(context.Background())
			if err == nil {
				_, err = g.h.Run(context.Background(), sid, "report on acme")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(runs), g.reports.Load())
	require.Zero(t, g.cb.Stats().InFlight)
	require.Zero(t, g.cb.Stats().Invocations)
	b, _ := g.deps.Get("crm")
	// Each run's first attempt is sent unless the breaker refuses it; retries only
	// within the budget: never more than two requests a run.
	require.LessOrEqual(t, g.server.Requests(), int64(2*runs))
	require.Equal(t, breaker.Open, b.State(), "the failures tripped it")
}

// Config.Timeout bounds each call: a tool that hangs fails as a counted timeout at the
// limit, and the node completes with the failed payload. synctest's fake time.
func TestTimeoutBoundsEachCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer synctest.Wait()
		defer close(release)
		hang, err := functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Hangs."},
			func(agent.Context, map[string]any) (map[string]any, error) {
				<-release
				return map[string]any{"late": true}, nil
			})
		require.NoError(t, err)
		// A fake clock for agentbreaker: the system clock's coarse ticker would outlive
		// the bubble. The timeout runs on synctest's time.
		clk := clock.NewFake(start)
		deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup"}, Policy: policy}}})
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk})
		n := workflowguard.MustNew(workflowguard.Config{Callbacks: cb, Tool: hang, Timeout: 5 * time.Second})
		var got atomic.Value
		report := workflow.NewFunctionNode("report", func(_ agent.Context, in map[string]any) (string, error) {
			got.Store(fmt.Sprint(in[payloads.KeyResponseType], " ", in[payloads.KeyErrorClass]))
			return "report", nil
		}, workflow.NodeConfig{})
		prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
			return map[string]any{"query": "acme"}, nil
		}, workflow.NodeConfig{})
		root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, n, report)})
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
		sid, err := h.NewSession(context.Background())
		require.NoError(t, err)
		began := time.Now()
		_, err = h.Run(context.Background(), sid, "report on acme")
		require.NoError(t, err)
		require.Equal(t, 5*time.Second, time.Since(began), "answered at the limit")
		require.Equal(t, payloads.TypeFailed+" timeout", got.Load())
		b, _ := deps.Get("crm")
		require.Equal(t, int64(1), b.Snapshot().Window.Failures, "the timeout counted")
	})
}

// The dependency's bulkhead applies to tool nodes: with one slot held by a run whose
// call is still going, another run's call is refused with the busy payload, as a
// result the graph routes, and is not sent.
func TestBulkheadAppliesToToolNodes(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	slow, err := functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Waits."},
		func(agent.Context, map[string]any) (map[string]any, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-release
			}
			return map[string]any{"tier": "gold"}, nil
		})
	require.NoError(t, err)
	clk := clock.NewFake(start)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup"}, Policy: policy}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 1}}})
	n := workflowguard.MustNew(workflowguard.Config{Callbacks: cb, Tool: slow})
	var routed atomic.Value
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	busy := workflow.NewFunctionNode("busy", func(_ agent.Context, in map[string]any) (string, error) {
		routed.Store(in[payloads.KeyResponseType])
		return "later", nil
	}, workflow.NodeConfig{})
	report := workflow.NewFunctionNode("report", func(agent.Context, map[string]any) (string, error) { return "report", nil }, workflow.NodeConfig{})
	edges := append(workflow.Chain(workflow.Start, prep, n),
		workflow.Edge{From: n, To: busy, Route: workflow.StringRoute(payloads.TypeBusy)},
		workflow.Edge{From: n, To: report, Route: workflow.Default})
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: edges})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	run := func() error {
		sid, err := h.NewSession(context.Background())
		if err != nil {
			return err
		}
		_, err = h.Run(context.Background(), sid, "report on acme")
		return err
	}
	first := make(chan error, 1)
	go func() { first <- run() }()
	<-started
	require.NoError(t, run())
	require.Equal(t, payloads.TypeBusy, routed.Load(), "the second run took the busy route")
	require.Equal(t, int64(1), calls.Load(), "the refused call never ran")
	close(release)
	require.NoError(t, <-first)
	require.Zero(t, cb.Stats().InFlight)
}
