package callbacks_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// retryUntilFirm calls the tool once per turn, and again while it is told the tool is
// unavailable, until the payload turns firm.
func retryUntilFirm(tool string) func(breakertest.Request) breakertest.Step {
	return func(r breakertest.Request) breakertest.Step {
		rs := r.FunctionResponses()
		if len(rs) == 0 || (rs[0].Response["status"] == "unavailable" && rs[0].Response["firm"] != true) {
			return breakertest.Call(tool, map[string]any{})
		}
		return breakertest.Text("done")
	}
}

// callIDs returns the function call IDs the model made in a turn, sorted.
func callIDs(turn *breakertest.Turn) []string {
	var ids []string
	for _, fc := range turn.FunctionCalls() {
		ids = append(ids, fc.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestObserverHearsEachShortCircuitOnce(t *testing.T) {
	t.Parallel()
	failing := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return nil, errBoom })
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{failing}, Then: retryUntilFirm("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	// Four failing turns trip the breaker (50% of 4 calls); each was sent, so each is
	// one CallOutcome and no short-circuit.
	for range 4 {
		f.Run(t, "go")
	}
	require.Equal(t, breaker.Open, f.Breaker(t, "crm").State())
	o := f.Obs.Snapshot()
	require.Len(t, o.Calls, 4)
	require.Empty(t, o.Shorts)
	for _, c := range o.Calls {
		require.Equal(t, classify.ClassUnclassified, c.V.Class) // a bare Go error
		require.Equal(t, c.InvocationID, c.V.RequestID)
		require.NotEmpty(t, c.CallID)
	}

	// Ten seconds later the model calls twice, is refused twice (the second time
	// firmly) and gives up: two short-circuits, both with the call's own context.
	f.Clock.Advance(10 * time.Second)
	turn := f.Run(t, "go")
	require.Equal(t, "done", turn.FinalText())
	o = f.Obs.Snapshot()
	require.Len(t, o.Calls, 4, "a short-circuit is never a call outcome")
	require.Len(t, o.Shorts, 2)
	var ids []string
	for _, s := range o.Shorts {
		require.Equal(t, observe.ShortCircuit{Dependency: "crm", Tool: "lookup", RequestID: turn.InvocationID(), State: breaker.Open, RetryAfter: 20 * time.Second}, s.V)
		require.Equal(t, turn.InvocationID(), s.InvocationID)
		ids = append(ids, s.CallID)
	}
	slices.Sort(ids)
	require.Equal(t, callIDs(turn), ids)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 2)

	// An operator's forced open reports its own state and no retry time.
	f.Breaker(t, "crm").ForceOpen("maintenance")
	f.Run(t, "go")
	o = f.Obs.Snapshot()
	require.Len(t, o.Shorts, 4)
	require.Equal(t, breaker.ForcedOpen, o.Shorts[3].V.State)
	require.Zero(t, o.Shorts[3].V.RetryAfter)
	require.Empty(t, o.Rejected)
	require.Zero(t, o.Other)
	f.RequireClean(t)
}

func TestObserverHearsBulkheadRejectionsNotShortCircuits(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	slow := callbackstest.FnTool(t, "enrich", func(agent.Context, map[string]any) (map[string]any, error) {
		<-release
		return map[string]any{"status": "ok"}, nil
	})
	var rejected int
	var mu sync.Mutex
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{slow},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{ID: "e1", Name: "enrich", Args: map[string]any{"n": 1}},
				&genai.FunctionCall{ID: "e2", Name: "enrich", Args: map[string]any{"n": 2}},
				&genai.FunctionCall{ID: "e3", Name: "enrich", Args: map[string]any{"n": 3}},
			),
			breakertest.Text("done"),
		},
		Deps: map[string]dependencymap.Dependency{"enrichment": {Tools: []string{"enrich"}}},
		Callbacks: callbacks.Config{
			Bulkheads: callbacks.Bulkheads{
				Limits: map[string]int{"enrichment": 1},
			},
			Observability: callbacks.Observability{
				OnEvent: func(e callbacks.Event) {
					// Let the admitted call finish once both others were rejected.
					if e.Kind == callbacks.EventBulkheadRejected {
						mu.Lock()
						rejected++
						if rejected == 2 {
							once.Do(func() { close(release) })
						}
						mu.Unlock()
					}
				},
			},
		},
	})
	f.Run(t, "go")
	o := f.Obs.Snapshot()
	require.Len(t, o.Rejected, 2)
	require.Empty(t, o.Shorts, "a bulkhead refusal is not a short-circuit")
	require.Len(t, o.Calls, 1, "the admitted call")
	ids := []string{o.Calls[0].CallID, o.Rejected[0].CallID, o.Rejected[1].CallID}
	slices.Sort(ids)
	require.Equal(t, []string{"e1", "e2", "e3"}, ids, "each report came with its own call's context")
	for _, r := range o.Rejected {
		require.Equal(t, "enrichment", r.V)
	}
	require.Equal(t, classify.Succeeded, o.Calls[0].V.Outcome)
	f.RequireClean(t)
}

func TestObserverHearsParallelCallsOnceEach(t *testing.T) {
	t.Parallel()
	calls := make([]*genai.FunctionCall, 8)
	for i := range calls {
		calls[i] = &genai.FunctionCall{ID: string(rune('a' + i)), Name: "lookup", Args: map[string]any{"i": i}}
	}
	calls[7].ID = "a" // the model repeats an ID: still two calls, two reports
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{okTool(t, "lookup")},
		Steps: []breakertest.Step{breakertest.Calls(calls...), breakertest.Text("done")},
	})
	f.Run(t, "go")
	o := f.Obs.Snapshot()
	require.Len(t, o.Calls, 8)
	var ids []string
	for _, c := range o.Calls {
		require.Equal(t, c.InvocationID, c.V.RequestID, "request_id is the invocation (issue 15f)")
		require.Equal(t, classify.Succeeded, c.V.Outcome)
		ids = append(ids, c.CallID)
	}
	slices.Sort(ids)
	require.Equal(t, []string{"a", "a", "b", "c", "d", "e", "f", "g"}, ids)
	f.RequireClean(t)
}

func TestObserverHearsOnceWithPluginAndAgentCallbacks(t *testing.T) {
	t.Parallel()
	f := callbackstest.New(t, callbackstest.Config{
		Then: callbackstest.CallsThenText("lookup"),
		Agent: func(f *callbackstest.Fixture, m *breakertest.Model) agent.Agent {
			a, err := f.CB.Build(callbacks.Node{Config: agentConfig("root", m, okTool(t, "lookup"))})
			require.NoError(t, err)
			return a
		},
	})
	f.Run(t, "go")
	require.Len(t, f.Obs.Snapshot().Calls, 1)
	f.Breaker(t, "lookup").ForceOpen("test")
	f.Run(t, "go")
	o := f.Obs.Snapshot()
	require.Len(t, o.Calls, 1)
	require.Len(t, o.Shorts, 1)
	f.RequireClean(t)
}

func TestObserverIgnoresUnsentCalls(t *testing.T) {
	t.Parallel()
	// A second agentbreaker after ours answers with its own payload, so the tool never
	// runs; without the dispatch marker the result is still known to be no call.
	foreign := callbackstest.MustPlugin(t, plugin.Config{Name: "other-breaker", BeforeToolCallback: func(_ agent.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
		if tl.Name() == "lookup" {
			return payloads.Unavailable(payloads.Info{Dependency: "crm", Tool: "lookup"}), nil
		}
		return nil, nil
	}})
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{okTool(t, "lookup"), okTool(t, "clock")},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{Name: "lookup", Args: map[string]any{}},
				&genai.FunctionCall{Name: "clock", Args: map[string]any{}},        // exempt below
				&genai.FunctionCall{Name: "no_such_tool", Args: map[string]any{}}, // invented
			),
			breakertest.Text("done"),
		},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{ExemptTools: []string{"clock"}},
		After:     []*plugin.Plugin{foreign},
	})
	f.Run(t, "go")
	o := f.Obs.Snapshot()
	require.Empty(t, o.Calls)
	require.Empty(t, o.Shorts, "the other breaker's refusal is its to report")
	require.Empty(t, o.Rejected)
	require.Equal(t, breaker.Counts{}, f.Breaker(t, "crm").Snapshot().Window)
	f.RequireClean(t)
}

func TestObserverHearsHiddenToolShortCircuits(t *testing.T) {
	t.Parallel()
	f := callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{okTool(t, "lookup"), okTool(t, "weather")},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{HideOpenTools: true}}},
		Steps: []breakertest.Step{
			breakertest.Calls(&genai.FunctionCall{ID: "h1", Name: "lookup", Args: map[string]any{}}), // hidden, called anyway
			breakertest.Text("done"),
		},
	})
	f.Breaker(t, "crm").ForceOpen("test")
	turn := f.Run(t, "go")
	require.Equal(t, true, turn.FunctionResponses()[0].Response["firm"])
	o := f.Obs.Snapshot()
	require.Len(t, o.Shorts, 1)
	require.Equal(t, observe.ShortCircuit{Dependency: "crm", Tool: "lookup", RequestID: turn.InvocationID(), State: breaker.ForcedOpen}, o.Shorts[0].V)
	require.Equal(t, "h1", o.Shorts[0].CallID)
	require.Empty(t, o.Calls)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 1)
	f.RequireClean(t)
}

// panicky panics in every method.
type panicky struct{}

func (panicky) BreakerEvent(breaker.Event)                         { panic("observer bug") }
func (panicky) ShortCircuit(context.Context, observe.ShortCircuit) { panic("observer bug") }
func (panicky) CallOutcome(context.Context, observe.Call)          { panic("observer bug") }
func (panicky) BulkheadRejected(context.Context, string)           { panic("observer bug") }
func (panicky) RetryBudgetExhausted(context.Context, string)       { panic("observer bug") }

func TestObserverPanicsAreRecovered(t *testing.T) {
	t.Parallel()
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{okTool(t, "lookup")},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{ID: "p1", Name: "lookup", Args: map[string]any{}},
				&genai.FunctionCall{ID: "p2", Name: "lookup", Args: map[string]any{}},
			),
			breakertest.Text("done"),
			breakertest.Call("lookup", map[string]any{}),
			breakertest.Text("done"),
		},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Observability: callbacks.Observability{Observer: panicky{}}},
	})
	turn := f.Run(t, "go")
	for _, fr := range turn.FunctionResponses() {
		require.Equal(t, "ok", fr.Response["status"], "the calls went on")
	}
	require.Equal(t, breaker.Counts{Calls: 2}, f.Breaker(t, "crm").Snapshot().Window, "and were measured")
	require.Equal(t, int64(2), f.CB.Stats().Panics)

	f.Breaker(t, "crm").ForceOpen("test")
	turn = f.Run(t, "go")
	require.Equal(t, payloads.TypeUnavailable, turn.FunctionResponses()[0].Response["response_type"])
	require.Equal(t, int64(3), f.CB.Stats().Panics)
	panics := f.Events.Of(callbacks.EventCallbackPanic)
	require.Len(t, panics, 3)
	require.Equal(t, "observer bug", panics[2].Panic)
	require.Equal(t, "crm", panics[2].Dependency)
	f.RequireClean(t)
}
