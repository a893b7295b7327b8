package callbacks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// limitedAgent has two HTTP tools on one dependency "search" with an adaptive limit
// (suggest is Low, web_search Normal), served by a server that counts requests.
type limitedAgent struct {
	srv          *breakertest.Server
	deps         *dependencymap.Map
	lim          *adaptivelimit.Limiter
	search, sugg tool.Tool
	fc           *clock.Fake
	mu           sync.Mutex
	events       []callbacks.Event
	rejected     chan struct{} // one per EventBulkheadRejected, when made
}

func newLimitedAgent(t *testing.T, cfg adaptivelimit.Config, policy breaker.Policy) *limitedAgent {
	t.Helper()
	x := &limitedAgent{srv: breakertest.NewServer(t), fc: clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))}
	x.srv.Set(breakertest.OK(`{"hits": 3}`))
	var err error
	x.search, err = breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "web_search", URL: x.srv.URL})
	require.NoError(t, err)
	x.sugg, err = breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "suggest", URL: x.srv.URL})
	require.NoError(t, err)
	x.deps = dependencymap.MustNew(dependencymap.Config{Clock: x.fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search", "suggest"}, Policy: policy, Adaptive: &cfg,
			Priorities: map[string]throttle.Priority{"suggest": throttle.Low}},
	}})
	x.lim = x.deps.Limiter("search")
	require.NotNil(t, x.lim)
	return x
}

func (x *limitedAgent) run(t *testing.T, ctx context.Context, steps ...breakertest.Step) *breakertest.Turn {
	t.Helper()
	return x.runWithState(t, ctx, nil, steps...)
}

// runWithState is run in a session created with state.
func (x *limitedAgent) runWithState(t *testing.T, ctx context.Context, state map[string]any, steps ...breakertest.Step) *breakertest.Turn {
	t.Helper()
	cb := callbacks.MustNew(callbacks.Config{Dependencies: x.deps, Clock: x.fc,
		Observability: callbacks.Observability{OnEvent: func(e callbacks.Event) {
			x.mu.Lock()
			x.events = append(x.events, e)
			x.mu.Unlock()
			if x.rejected != nil && e.Kind == callbacks.EventBulkheadRejected {
				x.rejected <- struct{}{}
			}
		}},
	})
	a, err := llmagent.New(agentConfig("root", breakertest.MustNewModel(breakertest.ModelConfig{Steps: steps}), x.search, x.sugg))
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}, AppName: "app", UserID: "u"})
	resp, err := h.Sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", State: state})
	require.NoError(t, err)
	turn, err := h.Run(ctx, resp.Session.ID(), "find it")
	require.NoError(t, err)
	return turn
}

// hold takes n Critical places of the limit, as calls of other turns in flight would.
func (x *limitedAgent) hold(t *testing.T, n int) []adaptivelimit.Permit {
	t.Helper()
	var ps []adaptivelimit.Permit
	for range n {
		p, err := x.lim.AcquireAt(x.fc.Now(), throttle.Critical)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	return ps
}

func TestAdaptiveLimitRefusesWithTheBusyPayloadThroughTheRunner(t *testing.T) {
	t.Parallel()
	x := newLimitedAgent(t, adaptivelimit.Config{MinLimit: 1, InitialLimit: 5}, breaker.Policy{})
	x.hold(t, 4) // web_search (Normal) may fill 4 of 5
	turn := x.run(t, context.Background(), breakertest.Call("web_search", map[string]any{"query": "q"}), breakertest.Text("later"))
	p := turn.FunctionResponses()[0].Response
	require.Equal(t, payloads.TypeBusy, p["response_type"])
	require.Equal(t, payloads.StatusUnavailable, p["status"])
	require.Equal(t, string(classify.ClassBulkheadFull), p["error_class"])
	require.Equal(t, "search", p["dependency"])
	require.Zero(t, x.srv.Requests(), "a refused call is not sent")
	b, _ := x.deps.Get("search")
	require.Zero(t, b.Snapshot().Window.Calls, "the breaker learns nothing from a refusal")
	require.Equal(t, uint64(1), x.lim.Refused(throttle.Normal))
	x.mu.Lock()
	defer x.mu.Unlock()
	var rejected []callbacks.Event
	for _, e := range x.events {
		if e.Kind == callbacks.EventBulkheadRejected {
			rejected = append(rejected, e)
		}
	}
	require.Len(t, rejected, 1)
	require.Equal(t, classify.Neutral, rejected[0].Verdict)
	require.Equal(t, throttle.Normal, rejected[0].Priority)
	require.Equal(t, classify.FailedBeforeSend, rejected[0].Outcome)
}

func TestAdaptiveLimitRefusesTheLowestPriorityFirstThroughTheRunner(t *testing.T) {
	t.Parallel()
	x := newLimitedAgent(t, adaptivelimit.Config{MinLimit: 1, InitialLimit: 10}, breaker.Policy{})
	x.hold(t, 6) // Low may fill 6 of 10, Normal 8
	turn := x.run(t, context.Background(),
		breakertest.Call("suggest", map[string]any{"query": "q"}),
		breakertest.Call("web_search", map[string]any{"query": "q"}),
		breakertest.Text("done"))
	rs := turn.FunctionResponses()
	require.Len(t, rs, 2)
	require.Equal(t, payloads.TypeBusy, rs[0].Response["response_type"], "suggest is Low: refused")
	require.Equal(t, "ok", rs[1].Response["status"], "web_search is Normal: sent")
	require.EqualValues(t, 1, x.srv.Requests())
	require.Equal(t, uint64(1), x.lim.Refused(throttle.Low))
	require.Zero(t, x.lim.Refused(throttle.Normal))

	// The run's context priority wins over the map's: suggest as Critical is sent.
	x.hold(t, 2) // 8 of 10 held: Normal is full too
	ctx := throttle.WithPriority(context.Background(), throttle.Critical)
	turn = x.run(t, ctx, breakertest.Call("suggest", map[string]any{"query": "q"}), breakertest.Text("done"))
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.EqualValues(t, 2, x.srv.Requests())
	require.Zero(t, x.lim.InFlight()-8, "the admitted calls gave their places back")

	// So does the session state's: suggest as High (90% of 10) is sent with 8 held.
	turn = x.runWithState(t, context.Background(), map[string]any{callbacks.PriorityStateKey: "high"},
		breakertest.Call("suggest", map[string]any{"query": "q"}), breakertest.Text("done"))
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.EqualValues(t, 3, x.srv.Requests())
	require.Equal(t, uint64(1), x.lim.Refused(throttle.Low), "no refusal since the first")
}

func TestAdaptiveLimitRefusalsNeverOpenTheBreakerThroughTheRunner(t *testing.T) {
	t.Parallel()
	// A breaker that would open on one failure in one call.
	x := newLimitedAgent(t, adaptivelimit.Config{MinLimit: 1, InitialLimit: 1}, breaker.Policy{MinimumCalls: 1, WindowCalls: 1, FailureRateThreshold: 0.5})
	held := x.hold(t, 1)
	var steps []breakertest.Step
	for range 12 {
		steps = append(steps, breakertest.Call("web_search", map[string]any{"query": "q"}))
	}
	turn := x.run(t, context.Background(), append(steps, breakertest.Text("later"))...)
	for _, r := range turn.FunctionResponses() {
		require.Equal(t, payloads.TypeBusy, r.Response["response_type"])
	}
	b, _ := x.deps.Get("search")
	require.Equal(t, breaker.Closed, b.State(), "twelve refusals, and the breaker is still closed")
	require.Zero(t, b.Snapshot().Window.Calls)
	require.Zero(t, x.srv.Requests())

	// An admitted call is measured as today: its 503 counts and opens the breaker.
	held[0].Release()
	x.srv.Set(breakertest.Status(503))
	x.run(t, context.Background(), breakertest.Call("web_search", map[string]any{"query": "q"}), breakertest.Text("later"))
	require.EqualValues(t, 1, x.srv.Requests())
	require.Equal(t, breaker.Open, b.State(), "the admitted call's failure counts")
	require.Zero(t, x.lim.InFlight())
}

func TestForcedClosedBreakerOverridesTheAdaptiveLimit(t *testing.T) {
	t.Parallel()
	x := newLimitedAgent(t, adaptivelimit.Config{MinLimit: 1, InitialLimit: 1}, breaker.Policy{})
	x.hold(t, 1)
	b, _ := x.deps.Get("search")
	b.ForceClosed("test")
	turn := x.run(t, context.Background(), breakertest.Call("web_search", map[string]any{"query": "q"}), breakertest.Text("done"))
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"], "the operator's state decides alone")
	require.EqualValues(t, 1, x.srv.Requests())
	require.Equal(t, 1, x.lim.InFlight(), "the forced call never took a place")
}

// The limit learns from calls the runner makes: a tool that slows from 100ms to 1s
// (on the fake clock) has its limit cut.
func TestAdaptiveLimitFallsWhenTheToolSlowsThroughTheRunner(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	latency := 100 * time.Millisecond
	calls := 0
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks up."}, func(agent.Context, map[string]any) (map[string]any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		fc.Advance(latency)
		return map[string]any{"ok": true}, nil
	})
	require.NoError(t, err)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"lookup"}, Adaptive: &adaptivelimit.Config{InitialLimit: 20, MinSamples: 3, UpdateInterval: 300 * time.Millisecond}},
	}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fc})
	steps := func(n int) []breakertest.Step {
		var s []breakertest.Step
		for range n {
			s = append(s, breakertest.Call("lookup", map[string]any{}))
		}
		return append(s, breakertest.Text("done"))
	}
	run := func(n int) {
		h := harnessWith(t, cb, breakertest.MustNewModel(breakertest.ModelConfig{Steps: steps(n)}), lookup)
		id, err := h.NewSession(context.Background())
		require.NoError(t, err)
		_, err = h.Run(context.Background(), id, "go")
		require.NoError(t, err)
	}
	run(8)
	l := deps.Limiter("crm")
	require.Equal(t, 100*time.Millisecond, l.NoLoad())
	require.Equal(t, 20, l.Limit())
	mu.Lock()
	latency = time.Second
	mu.Unlock()
	run(8)
	require.Less(t, l.Limit(), 10, "calls ten times the no-load latency cut the limit")
	require.Equal(t, 16, calls)
	require.Zero(t, l.InFlight())
}

// Parallel calls of one model response (adk-go runs each on its own goroutine) against
// a dependency that holds every request: four of six fill Normal's share of a limit of
// five and reach the server, counted there; the other two are refused at once with the
// busy payload while the four are still in flight, and every place is given back.
func TestAdaptiveLimitHoldsParallelCallsThroughTheRunner(t *testing.T) {
	t.Parallel()
	x := newLimitedAgent(t, adaptivelimit.Config{MinLimit: 1, InitialLimit: 5}, breaker.Policy{})
	x.srv.Set(breakertest.Behavior{Hang: true, Body: `{"hits": 1}`})
	x.rejected = make(chan struct{}, 6)
	var calls []*genai.FunctionCall
	for i := range 6 {
		calls = append(calls, &genai.FunctionCall{ID: fmt.Sprintf("c%d", i), Name: "web_search", Args: map[string]any{"query": "q"}})
	}
	done := make(chan *breakertest.Turn, 1)
	go func() { done <- x.run(t, context.Background(), breakertest.Calls(calls...), breakertest.Text("done")) }()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	require.NoError(t, x.srv.WaitHanging(ctx, 4))
	testwait.Recv(t, x.rejected, "the first refusal")
	testwait.Recv(t, x.rejected, "the second refusal")
	require.Equal(t, uint64(2), x.lim.Refused(throttle.Normal))
	require.Equal(t, 4, x.lim.InFlight())
	x.srv.Release()
	turn := testwait.Recv(t, done, "the turn")
	busy := 0
	for _, r := range turn.FunctionResponses() {
		if r.Response["response_type"] == payloads.TypeBusy {
			busy++
		}
	}
	require.Equal(t, 2, busy)
	require.EqualValues(t, 4, x.srv.Requests())
	require.Zero(t, x.lim.InFlight())
	b, _ := x.deps.Get("search")
	require.EqualValues(t, 4, b.Snapshot().Window.Calls, "the four sent calls, not the refusals")
}
