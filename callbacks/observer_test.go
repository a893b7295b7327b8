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
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// observed is one report with what the context it came with says about the call.
type observed[T any] struct {
	v            T
	callID       string // the context's FunctionCallID; "" when it is no tool context
	invocationID string
}

// recorder is an observe.Calls that keeps every report. It is safe for concurrent use:
// parallel calls report from their own goroutines.
type recorder struct {
	mu       sync.Mutex
	shorts   []observed[observe.ShortCircuit]
	calls    []observed[observe.Call]
	rejected []observed[string]
	other    int // BreakerEvent and RetryBudgetExhausted: the callbacks never call them
}

var _ observe.Calls = (*recorder)(nil)

func from[T any](ctx context.Context, v T) observed[T] {
	o := observed[T]{v: v}
	if tc, ok := ctx.(agent.Context); ok {
		o.callID, o.invocationID = tc.FunctionCallID(), tc.InvocationID()
	}
	return o
}

func (r *recorder) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	r.mu.Lock()
	r.shorts = append(r.shorts, from(ctx, s))
	r.mu.Unlock()
}

func (r *recorder) CallOutcome(ctx context.Context, c observe.Call) {
	r.mu.Lock()
	r.calls = append(r.calls, from(ctx, c))
	r.mu.Unlock()
}

func (r *recorder) BulkheadRejected(ctx context.Context, dep string) {
	r.mu.Lock()
	r.rejected = append(r.rejected, from(ctx, dep))
	r.mu.Unlock()
}

func (r *recorder) BreakerEvent(breaker.Event) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

func (r *recorder) RetryBudgetExhausted(context.Context, string) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

// recording is a copy of what a recorder holds.
type recording struct {
	shorts   []observed[observe.ShortCircuit]
	calls    []observed[observe.Call]
	rejected []observed[string]
	other    int
}

func (r *recorder) snapshot() recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recording{slices.Clone(r.shorts), slices.Clone(r.calls), slices.Clone(r.rejected), r.other}
}

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
	failing := fnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return nil, errBoom })
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{failing}, then: retryUntilFirm("lookup"),
		deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	// Four failing turns trip the breaker (50% of 4 calls); each was sent, so each is
	// one CallOutcome and no short-circuit.
	for range 4 {
		f.run(t, "go")
	}
	require.Equal(t, breaker.Open, f.breaker(t, "crm").State())
	o := f.obs.snapshot()
	require.Len(t, o.calls, 4)
	require.Empty(t, o.shorts)
	for _, c := range o.calls {
		require.Equal(t, classify.ClassUnclassified, c.v.Class) // a bare Go error
		require.Equal(t, c.invocationID, c.v.RequestID)
		require.NotEmpty(t, c.callID)
	}

	// Ten seconds later the model calls twice, is refused twice (the second time
	// firmly) and gives up: two short-circuits, both with the call's own context.
	f.clk.Advance(10 * time.Second)
	turn := f.run(t, "go")
	require.Equal(t, "done", turn.FinalText())
	o = f.obs.snapshot()
	require.Len(t, o.calls, 4, "a short-circuit is never a call outcome")
	require.Len(t, o.shorts, 2)
	var ids []string
	for _, s := range o.shorts {
		require.Equal(t, observe.ShortCircuit{Dependency: "crm", Tool: "lookup", RequestID: turn.InvocationID(), State: breaker.Open, RetryAfter: 20 * time.Second}, s.v)
		require.Equal(t, turn.InvocationID(), s.invocationID)
		ids = append(ids, s.callID)
	}
	slices.Sort(ids)
	require.Equal(t, callIDs(turn), ids)
	require.Len(t, f.ev.of(callbacks.EventShortCircuit), 2)

	// An operator's forced open reports its own state and no retry time.
	f.breaker(t, "crm").ForceOpen("maintenance")
	f.run(t, "go")
	o = f.obs.snapshot()
	require.Len(t, o.shorts, 4)
	require.Equal(t, breaker.ForcedOpen, o.shorts[3].v.State)
	require.Zero(t, o.shorts[3].v.RetryAfter)
	require.Empty(t, o.rejected)
	require.Zero(t, o.other)
	f.requireClean(t)
}

func TestObserverHearsBulkheadRejectionsNotShortCircuits(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	slow := fnTool(t, "enrich", func(agent.Context, map[string]any) (map[string]any, error) {
		<-release
		return map[string]any{"status": "ok"}, nil
	})
	var rejected int
	var mu sync.Mutex
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{slow},
		steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{ID: "e1", Name: "enrich", Args: map[string]any{"n": 1}},
				&genai.FunctionCall{ID: "e2", Name: "enrich", Args: map[string]any{"n": 2}},
				&genai.FunctionCall{ID: "e3", Name: "enrich", Args: map[string]any{"n": 3}},
			),
			breakertest.Text("done"),
		},
		deps: map[string]dependencymap.Dependency{"enrichment": {Tools: []string{"enrich"}}},
		cfg: callbacks.Config{Bulkheads: map[string]int{"enrichment": 1},
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
			}},
	})
	f.run(t, "go")
	o := f.obs.snapshot()
	require.Len(t, o.rejected, 2)
	require.Empty(t, o.shorts, "a bulkhead refusal is not a short-circuit")
	require.Len(t, o.calls, 1, "the admitted call")
	ids := []string{o.calls[0].callID, o.rejected[0].callID, o.rejected[1].callID}
	slices.Sort(ids)
	require.Equal(t, []string{"e1", "e2", "e3"}, ids, "each report came with its own call's context")
	for _, r := range o.rejected {
		require.Equal(t, "enrichment", r.v)
	}
	require.Equal(t, classify.Succeeded, o.calls[0].v.Outcome)
	f.requireClean(t)
}

func TestObserverHearsParallelCallsOnceEach(t *testing.T) {
	t.Parallel()
	calls := make([]*genai.FunctionCall, 8)
	for i := range calls {
		calls[i] = &genai.FunctionCall{ID: string(rune('a' + i)), Name: "lookup", Args: map[string]any{"i": i}}
	}
	calls[7].ID = "a" // the model repeats an ID: still two calls, two reports
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{okTool(t, "lookup")},
		steps: []breakertest.Step{breakertest.Calls(calls...), breakertest.Text("done")},
	})
	f.run(t, "go")
	o := f.obs.snapshot()
	require.Len(t, o.calls, 8)
	var ids []string
	for _, c := range o.calls {
		require.Equal(t, c.invocationID, c.v.RequestID, "request_id is the invocation (issue 15f)")
		require.Equal(t, classify.Succeeded, c.v.Outcome)
		ids = append(ids, c.callID)
	}
	slices.Sort(ids)
	require.Equal(t, []string{"a", "a", "b", "c", "d", "e", "f", "g"}, ids)
	f.requireClean(t)
}

func TestObserverHearsOnceWithPluginAndAgentCallbacks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{
		then: callsThenText("lookup"),
		agent: func(f *fixture, m *breakertest.Model) agent.Agent {
			a, err := f.cb.Build(callbacks.Node{Config: agentConfig("root", m, okTool(t, "lookup"))})
			require.NoError(t, err)
			return a
		},
	})
	f.run(t, "go")
	require.Len(t, f.obs.snapshot().calls, 1)
	f.breaker(t, "lookup").ForceOpen("test")
	f.run(t, "go")
	o := f.obs.snapshot()
	require.Len(t, o.calls, 1)
	require.Len(t, o.shorts, 1)
	f.requireClean(t)
}

func TestObserverIgnoresUnsentCalls(t *testing.T) {
	t.Parallel()
	// A second agentbreaker after ours answers with its own payload, so the tool never
	// runs; without the dispatch marker the result is still known to be no call.
	foreign := mustPlugin(t, plugin.Config{Name: "other-breaker", BeforeToolCallback: func(_ agent.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
		if tl.Name() == "lookup" {
			return payloads.Unavailable(payloads.Info{Dependency: "crm", Tool: "lookup"}), nil
		}
		return nil, nil
	}})
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{okTool(t, "lookup"), okTool(t, "clock")},
		steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{Name: "lookup", Args: map[string]any{}},
				&genai.FunctionCall{Name: "clock", Args: map[string]any{}},        // exempt below
				&genai.FunctionCall{Name: "no_such_tool", Args: map[string]any{}}, // invented
			),
			breakertest.Text("done"),
		},
		deps:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		cfg:   callbacks.Config{ExemptTools: []string{"clock"}},
		after: []*plugin.Plugin{foreign},
	})
	f.run(t, "go")
	o := f.obs.snapshot()
	require.Empty(t, o.calls)
	require.Empty(t, o.shorts, "the other breaker's refusal is its to report")
	require.Empty(t, o.rejected)
	require.Equal(t, breaker.Counts{}, f.breaker(t, "crm").Snapshot().Window)
	f.requireClean(t)
}

func TestObserverHearsHiddenToolShortCircuits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{okTool(t, "lookup"), okTool(t, "weather")},
		deps:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		cfg:   callbacks.Config{LoopGuard: loopguard.Config{HideOpenTools: true}},
		steps: []breakertest.Step{
			breakertest.Calls(&genai.FunctionCall{ID: "h1", Name: "lookup", Args: map[string]any{}}), // hidden, called anyway
			breakertest.Text("done"),
		},
	})
	f.breaker(t, "crm").ForceOpen("test")
	turn := f.run(t, "go")
	require.Equal(t, true, turn.FunctionResponses()[0].Response["firm"])
	o := f.obs.snapshot()
	require.Len(t, o.shorts, 1)
	require.Equal(t, observe.ShortCircuit{Dependency: "crm", Tool: "lookup", RequestID: turn.InvocationID(), State: breaker.ForcedOpen}, o.shorts[0].v)
	require.Equal(t, "h1", o.shorts[0].callID)
	require.Empty(t, o.calls)
	require.Len(t, f.ev.of(callbacks.EventShortCircuit), 1)
	f.requireClean(t)
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
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{okTool(t, "lookup")},
		steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{ID: "p1", Name: "lookup", Args: map[string]any{}},
				&genai.FunctionCall{ID: "p2", Name: "lookup", Args: map[string]any{}},
			),
			breakertest.Text("done"),
			breakertest.Call("lookup", map[string]any{}),
			breakertest.Text("done"),
		},
		deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		cfg:  callbacks.Config{Observer: panicky{}},
	})
	turn := f.run(t, "go")
	for _, fr := range turn.FunctionResponses() {
		require.Equal(t, "ok", fr.Response["status"], "the calls went on")
	}
	require.Equal(t, breaker.Counts{Calls: 2}, f.breaker(t, "crm").Snapshot().Window, "and were measured")
	require.Equal(t, int64(2), f.cb.Stats().Panics)

	f.breaker(t, "crm").ForceOpen("test")
	turn = f.run(t, "go")
	require.Equal(t, payloads.TypeUnavailable, turn.FunctionResponses()[0].Response["response_type"])
	require.Equal(t, int64(3), f.cb.Stats().Panics)
	panics := f.ev.of(callbacks.EventCallbackPanic)
	require.Len(t, panics, 3)
	require.Equal(t, "observer bug", panics[2].Panic)
	require.Equal(t, "crm", panics[2].Dependency)
	f.requireClean(t)
}
