package callbacks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// throttled is an agent whose search tool's dependency has a throttle that refuses
// every call it may refuse (its random draw is always 0), so a test decides what is
// shed by the share p it sets up.
type throttled struct {
	srv    *breakertest.Server
	deps   *dependencymap.Map
	th     *throttle.Throttle
	search tool.Tool
	fc     *clock.Fake
	retry  *retry.Retrier // Config.SideEffects.Retry, when set
	obs    observe.Calls  // Config.Observability.Observer, when set

	mu     sync.Mutex
	events []callbacks.Event
}

func newThrottled(t *testing.T, pr map[string]throttle.Priority, policy breaker.Policy) *throttled {
	return newThrottledMin(t, pr, policy, 1)
}

func newThrottledMin(t *testing.T, pr map[string]throttle.Priority, policy breaker.Policy, minRequests int) *throttled {
	t.Helper()
	x := &throttled{srv: breakertest.NewServer(t), fc: clock.NewFake(time.Time{})}
	x.srv.Set(breakertest.OK(`{"hits": 3}`))
	var err error
	x.search, err = breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "web_search", URL: x.srv.URL})
	require.NoError(t, err)
	x.deps = dependencymap.MustNew(dependencymap.Config{Clock: x.fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Policy: policy, Priorities: pr,
			Throttle: &throttle.Config{K: 1, MinRequests: minRequests, Rand: func() uint64 { return 0 }}},
	}})
	x.th, _ = x.deps.Throttle("search")
	return x
}

// fill sets the throttle's window to n requests of which accepted were accepted.
func (x *throttled) fill(n, accepted int) {
	for i := range n {
		x.th.Report(i < accepted)
	}
}

// highMix makes the mix the throttle has seen High calls only, so that the share p
// taken from the lowest priorities first falls entirely on a Normal call: it is shed
// whatever its invocation's draw.
func (x *throttled) highMix() {
	for range 40 {
		x.th.Allow(throttle.High)
	}
}

func (x *throttled) run(t *testing.T, ctx context.Context, state map[string]any, steps ...breakertest.Step) *breakertest.Turn {
	t.Helper()
	cb := callbacks.MustNew(callbacks.Config{Dependencies: x.deps, Clock: x.fc,
		SideEffects: callbacks.SideEffects{Retry: x.retry},
		Observability: callbacks.Observability{
			Observer: x.obs,
			OnEvent: func(e callbacks.Event) {
				x.mu.Lock()
				x.events = append(x.events, e)
				x.mu.Unlock()
			},
		},
	})
	a, err := llmagent.New(agentConfig("root", breakertest.MustNewModel(breakertest.ModelConfig{Steps: steps}), x.search))
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}, AppName: "app", UserID: "u"})
	resp, err := h.Sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", State: state})
	require.NoError(t, err)
	turn, err := h.Run(ctx, resp.Session.ID(), "find it")
	require.NoError(t, err)
	return turn
}

func (x *throttled) kinds() []callbacks.EventKind {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []callbacks.EventKind
	for _, e := range x.events {
		out = append(out, e.Kind)
	}
	return out
}

func searchCall() breakertest.Step {
	return breakertest.Call("web_search", map[string]any{"query": "q"})
}

func TestThrottleShedsACallWithThePayloadThroughTheRunner(t *testing.T) {
	t.Parallel()
	x := newThrottled(t, nil, breaker.Policy{})
	x.fill(20, 2) // p = 18/21: the dependency handles one call in ten
	x.highMix()
	turn := x.run(t, context.Background(), nil, searchCall(), breakertest.Text("later"))
	p := turn.FunctionResponses()[0].Response
	require.Equal(t, payloads.TypeShed, p["response_type"])
	require.Equal(t, payloads.StatusOverloaded, p["status"])
	require.Equal(t, false, p["call_sent"])
	require.Equal(t, false, p["retry_advised"], "most calls are shed: no retry advised (TestTheShedPayloadSaysTheShareShed)")
	require.Zero(t, x.srv.Requests(), "a shed call is not sent")
	crm, _ := x.deps.Get("search")
	require.Equal(t, breaker.Closed, crm.State())
	require.Zero(t, crm.Snapshot().Window.Calls, "the breaker learns nothing from a shed call")
	require.Contains(t, x.kinds(), callbacks.EventShed)
	require.Equal(t, uint64(1), x.th.Shed(throttle.Normal), "the call the model made")
}

// spanObserver records what the callbacks hand to an Observer's optional Spans side.
type spanObserver struct {
	observe.Nop
	mu    sync.Mutex
	sheds []observe.Shed
	ids   []string // function call IDs of the sheds' contexts
}

func (o *spanObserver) Shed(ctx context.Context, s observe.Shed) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sheds = append(o.sheds, s)
	if c, ok := ctx.(interface{ FunctionCallID() string }); ok {
		o.ids = append(o.ids, c.FunctionCallID())
	}
}

func (o *spanObserver) TransitionDuring(context.Context, string) {}

// TestShedReachesAnObserverWithSpans: a call the throttle sheds is handed, with the
// call's own context (which carries its execute_tool span), to an Observer that
// implements observe.Spans; the telemetry packages put it on that span.
func TestShedReachesAnObserverWithSpans(t *testing.T) {
	t.Parallel()
	x := newThrottled(t, nil, breaker.Policy{})
	obs := &spanObserver{}
	x.obs = obs
	x.fill(20, 2)
	x.highMix()
	turn := x.run(t, context.Background(), nil, searchCall(), breakertest.Text("later"))
	require.Equal(t, payloads.TypeShed, turn.FunctionResponses()[0].Response["response_type"])
	require.Zero(t, x.srv.Requests())
	require.Equal(t, []observe.Shed{{Dependency: "search", Tool: "web_search", Priority: "normal", RequestID: obs.sheds[0].RequestID}}, obs.sheds)
	require.NotEmpty(t, obs.sheds[0].RequestID, "the invocation")
	require.Equal(t, []string{turn.FunctionResponses()[0].ID}, obs.ids, "the shed call's own context")
}

func TestThrottleCountsWhatTheDependencyHandled(t *testing.T) {
	t.Parallel()
	x := newThrottledMin(t, nil, breaker.Policy{MinimumCalls: 100}, 10)
	x.srv.Enqueue(breakertest.OK(`{}`), breakertest.Status(404), breakertest.Status(503), breakertest.Status(429))
	x.run(t, context.Background(), nil, searchCall(), searchCall(), searchCall(), searchCall(), breakertest.Text("done"))
	require.EqualValues(t, 4, x.srv.Requests())
	// 200 and 404 were handled; 503 and 429 were not.
	require.Equal(t, throttle.Counts{Requests: 4, Accepts: 2}, x.th.Counts())
}

func TestThrottlePriorityFromTheMapContextAndState(t *testing.T) {
	t.Parallel()
	// p ≈ 0.5 over a mix of a quarter of each priority: the share is taken from Low
	// and Normal calls entirely, and no High or Critical call is shed.
	tests := []struct {
		name  string
		mapPr throttle.Priority
		ctxPr throttle.Priority // 0: none
		state map[string]any
		sent  bool
	}{
		{"map critical", throttle.Critical, 0, nil, true},
		{"map low", throttle.Low, 0, nil, false},
		{"context lowers a critical tool", throttle.Critical, throttle.Low, nil, false},
		{"context raises a low tool", throttle.Low, throttle.Critical, nil, true},
		{"state raises a low tool", throttle.Low, 0, map[string]any{callbacks.PriorityStateKey: "critical"}, true},
		{"state lowers a critical tool", throttle.Critical, 0, map[string]any{callbacks.PriorityStateKey: "low"}, false},
		{"context wins over state", throttle.Low, throttle.Critical, map[string]any{callbacks.PriorityStateKey: "low"}, true},
		{"a bad state value is ignored", throttle.Critical, 0, map[string]any{callbacks.PriorityStateKey: "urgent"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := newThrottled(t, map[string]throttle.Priority{"web_search": tt.mapPr}, breaker.Policy{MinimumCalls: 100})
			x.fill(10000, 5000)
			for range 10 {
				for _, pr := range throttle.Priorities() {
					x.th.Allow(pr)
				}
			}
			ctx := context.Background()
			if tt.ctxPr != 0 {
				ctx = throttle.WithPriority(ctx, tt.ctxPr)
			}
			turn := x.run(t, ctx, tt.state, searchCall(), breakertest.Text("ok"))
			p := turn.FunctionResponses()[0].Response
			if tt.sent {
				require.EqualValues(t, 1, x.srv.Requests())
				require.NotEqual(t, payloads.TypeShed, p["response_type"])
			} else {
				require.Zero(t, x.srv.Requests())
				require.Equal(t, payloads.TypeShed, p["response_type"])
			}
		})
	}
}

func TestForcedStatesOverrideTheThrottle(t *testing.T) {
	t.Parallel()
	x := newThrottled(t, nil, breaker.Policy{MinimumCalls: 100})
	x.fill(20, 1)
	b, _ := x.deps.Get("search")

	b.ForceClosed("operator: send everything")
	turn := x.run(t, context.Background(), nil, searchCall(), breakertest.Text("ok"))
	require.EqualValues(t, 1, x.srv.Requests(), "forced closed: the throttle stands aside")
	require.Equal(t, "ok", turn.FinalText())

	b.ForceOpen("operator: maintenance")
	turn = x.run(t, context.Background(), nil, searchCall(), breakertest.Text("down"))
	require.EqualValues(t, 1, x.srv.Requests())
	require.Equal(t, payloads.TypeUnavailable, turn.FunctionResponses()[0].Response["response_type"], "forced open: the breaker's answer, not the throttle's")
}

func TestBreakerStillOpensOnATotalOutageWithTheThrottleOn(t *testing.T) {
	t.Parallel()
	x := newThrottled(t, nil, breaker.Policy{MinimumCalls: 4})
	x.fill(4, 4) // the dependency was healthy a moment ago
	x.srv.Set(breakertest.Status(503))
	b, _ := x.deps.Get("search")
	start := x.fc.Now()
	// While the healthy calls are in the throttle's window the dependency counts as
	// partly up: the throttle sheds, and its 503s are the throttle's to act on. Once the
	// window holds no accepted call they count, and the breaker opens as it would
	// without a throttle.
	for turn := 0; b.State() == breaker.Closed; turn++ {
		require.Less(t, turn, 20, "the breaker never opened")
		x.run(t, context.Background(), nil, searchCall(), breakertest.Text("down"))
		x.fc.Advance(5 * time.Second)
	}
	require.GreaterOrEqual(t, x.fc.Now().Sub(start), throttle.DefaultWindow, "not before the accepts left the window")
	require.Equal(t, breaker.Open, b.State())
	require.LessOrEqual(t, x.srv.Requests(), int64(12), "one call a turn at most, and the breaker opens once 4 count")
}

func TestShedCallsCountTowardTheLoopGuard(t *testing.T) {
	t.Parallel()
	x := newThrottled(t, nil, breaker.Policy{MinimumCalls: 100})
	x.fill(20, 1)
	x.highMix()
	turn := x.run(t, context.Background(), nil, searchCall(), searchCall(), searchCall(), breakertest.Text("without it"))
	rs := turn.FunctionResponses()
	require.Len(t, rs, 3)
	require.Nil(t, rs[0].Response["firm"])
	require.Equal(t, true, rs[len(rs)-1].Response["firm"], "the model kept re-issuing a shed call")
	require.Equal(t, false, rs[len(rs)-1].Response["retry_advised"])
	require.Contains(t, x.kinds(), callbacks.EventLoopGuardFirm)
	require.Zero(t, x.srv.Requests())
}

// Issue 25 (f): while the throttle sheds, the model's re-issue of a failed call in a
// turn the dependency has already served is the throttle's to bound (it ranks it
// critical and counts it among its requests), so the retry budget does not refuse it
// and the turn gets all of its data. In a turn the dependency has not served, the
// budget still refuses the re-issue.
func TestAServedTurnsReissueIsNotRefusedByTheRetryBudgetWhileShedding(t *testing.T) {
	t.Parallel()
	for _, served := range []bool{true, false} {
		name := map[bool]string{true: "served", false: "not served"}[served]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			x := newThrottledMin(t, nil, breaker.Policy{MinimumCalls: 100}, 10)
			// No retry is ever in the budget: a ratio of 10% of a few operations, no floor.
			x.retry = retry.MustNew(retry.Config{Clock: x.fc,
				Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: x.fc, MinRetriesPerSecond: -1})})
			x.fill(100, 60) // p ≈ 0.4, all of it taken from the Low calls of the mix
			for range 40 {
				x.th.Allow(throttle.Low)
			}
			require.True(t, x.th.Shedding())
			other := breakertest.Call("web_search", map[string]any{"query": "other"})
			steps := []breakertest.Step{searchCall(), searchCall(), breakertest.Text("done")}
			if served {
				x.srv.Enqueue(breakertest.OK(`{"hits": 1}`))
				steps = append([]breakertest.Step{other}, steps...)
			}
			x.srv.Enqueue(breakertest.Status(503), breakertest.OK(`{"hits": 2}`))
			turn := x.run(t, context.Background(), nil, steps...)
			rs := turn.FunctionResponses()
			last := rs[len(rs)-1].Response
			if served {
				require.EqualValues(t, 3, x.srv.Requests(), "the re-issue was sent")
				require.NotContains(t, last, "response_type", "the re-issue got the data: %v", last)
				b, err := x.retry.Budgets().For("search")
				require.NoError(t, err)
				require.Zero(t, b.Stats().Refused)
				return
			}
			require.EqualValues(t, 1, x.srv.Requests(), "the budget refused the re-issue")
			require.Equal(t, payloads.TypeBudgetExhausted, last["response_type"])
		})
	}
}
