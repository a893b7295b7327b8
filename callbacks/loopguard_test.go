package callbacks_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// untilFirm calls the tool until a payload comes back firm, then answers without it.
func untilFirm(tool string) func(breakertest.Request) breakertest.Step {
	return func(r breakertest.Request) breakertest.Step {
		for _, fr := range r.FunctionResponses() {
			if fr.Response["firm"] == true {
				return breakertest.Text("answering without " + tool)
			}
		}
		return breakertest.Call(tool, map[string]any{})
	}
}

// stubborn calls the tool whatever it is told.
func stubborn(tool string) func(breakertest.Request) breakertest.Step {
	return func(breakertest.Request) breakertest.Step { return breakertest.Call(tool, map[string]any{}) }
}

func okTool(t *testing.T, name string) tool.Tool {
	return callbackstest.FnTool(t, name, func(agent.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok"}, nil
	})
}

func TestThePayloadTurnsFirmAndTheModelStops(t *testing.T) {
	t.Parallel()
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{okTool(t, "lookup")}, Then: untilFirm("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	f.Breaker(t, "crm").ForceOpen("test")
	turn := f.Run(t, "look it up")
	require.Equal(t, "answering without lookup", turn.FinalText())
	rs := turn.FunctionResponses()
	require.Len(t, rs, 2)
	require.NotContains(t, rs[0].Response, "firm")
	require.Equal(t, true, rs[1].Response["firm"])
	require.Contains(t, rs[1].Response["instruction"], "Stop calling it and answer the user now without it")
	require.Len(t, f.Events.Of(callbacks.EventLoopGuardFirm), 1)
	require.Equal(t, 2, f.Events.Of(callbacks.EventLoopGuardFirm)[0].ShortCircuits)

	// The count is mirrored into temp: state, visible in the events' state deltas.
	key := loopguard.DefaultStatePrefix + "crm"
	var seen []any
	for _, ev := range turn.Events {
		if v, ok := ev.Actions.StateDelta[key]; ok {
			seen = append(seen, v)
		}
	}
	require.Equal(t, []any{1, 2}, seen)

	// A new turn is a new invocation: the count starts again.
	turn = f.Run(t, "again")
	require.NotContains(t, turn.FunctionResponses()[0].Response, "firm")
	f.RequireClean(t)
}

func TestModelCallsAreCappedWhileDependenciesAreOpen(t *testing.T) {
	t.Parallel()
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{okTool(t, "lookup")}, Then: stubborn("lookup"),
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{MaxModelCallsWhileOpen: 3}}},
	})
	f.Breaker(t, "crm").ForceOpen("test")
	turn := f.Run(t, "look it up")
	require.Equal(t, "I could not finish this request because crm is unavailable right now. Please try again later.", turn.FinalText())
	require.Equal(t, 1+3, f.Model.Calls(), "the first call, then three more after the first short-circuit")
	require.Len(t, turn.FunctionResponses(), 4)
	require.Len(t, f.Events.Of(callbacks.EventModelCallCapped), 1)
	f.RequireClean(t)
}

// TestOpenToolsAreHiddenUntilAProbeMayGo (issue 18a): a tool of an open dependency is
// left out of the model's declarations, a call made anyway asks the breaker (and gets
// the firm payload while it refuses), and the tool is offered again in the same
// invocation as soon as the breaker lets calls through.
func TestOpenToolsAreHiddenUntilAProbeMayGo(t *testing.T) {
	t.Parallel()
	var f *callbackstest.Fixture
	step := 0
	var lookups atomic.Int64
	lookup := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) {
		lookups.Add(1)
		return map[string]any{"status": "ok"}, nil
	})
	// The weather tool closes the crm breaker mid-invocation.
	weather := callbackstest.FnTool(t, "weather", func(agent.Context, map[string]any) (map[string]any, error) {
		f.Breaker(t, "crm").Reset("recovered")
		return map[string]any{"status": "ok"}, nil
	})
	f = callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{lookup, weather},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{HideOpenTools: true}}},
		Then: func(r breakertest.Request) breakertest.Step {
			step++
			switch step {
			case 1, 3:
				return breakertest.Call("lookup", map[string]any{}) // hidden at 1, offered again at 3
			case 2:
				return breakertest.Call("weather", map[string]any{})
			}
			return breakertest.Text("done")
		},
	})
	f.Breaker(t, "crm").ForceOpen("test")
	turn := f.Run(t, "go")
	reqs := f.Model.Requests()
	require.Len(t, reqs, 4)
	_, offered := reqs[0].Declaration("lookup")
	require.False(t, offered, "the open tool is not offered")
	require.Equal(t, []string{"lookup", "weather"}, reqs[0].ToolNames, "but it stays dispatchable")
	rs := turn.FunctionResponses()
	require.Len(t, rs, 3)
	require.Equal(t, payloads.TypeUnavailable, rs[0].Response["response_type"], "a hidden tool called anyway asks the breaker, which refuses")
	require.Equal(t, true, rs[0].Response["firm"], "it was not offered: the payload is firm at once")
	require.Equal(t, "ok", rs[1].Response["status"])
	require.Equal(t, "closed", f.Breaker(t, "crm").State().String())
	_, offered = reqs[2].Declaration("lookup")
	require.True(t, offered, "closed mid-invocation: offered again at the next model call")
	require.Equal(t, "ok", rs[2].Response["status"])
	require.Equal(t, int64(1), lookups.Load(), "the refused call never ran; the offered one did")
	require.Len(t, f.Events.Of(callbacks.EventToolsHidden), 2)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 1)
	f.RequireClean(t)
}
