package callbacks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
)

// researcher is a sub-agent run as a tool: it calls "search" and reports what it got.
func researchTree(t *testing.T, search tool.Tool) (root, sub *breakertest.Model, node callbacks.Node) {
	t.Helper()
	sub = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if rs := r.FunctionResponses(); len(rs) > 0 {
			if rs[0].Response["status"] == "unavailable" {
				return breakertest.Text("search is unavailable")
			}
			return breakertest.Text("found it")
		}
		return breakertest.Call("search", map[string]any{})
	}})
	root = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if rs := r.FunctionResponses(); len(rs) > 0 {
			return breakertest.Text("researcher said: " + rs[0].Response["result"].(string))
		}
		return breakertest.Call("researcher", map[string]any{"request": "look"})
	}})
	node = callbacks.Node{
		Config: llmagent.Config{Name: "root", Model: root},
		AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{
			Config: llmagent.Config{Name: "researcher", Description: "Researches.", Model: sub, Tools: []tool.Tool{search}},
		}}},
	}
	return root, sub, node
}

func TestAgentToolSubAgentsNeedAgentLevelCallbacks(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	search := callbackstest.FnTool(t, "search", func(agent.Context, map[string]any) (map[string]any, error) {
		runs.Add(1)
		return nil, errBoom
	})
	depsCfg := dependencymap.Config{Default: callbackstest.Policy, Dependencies: map[string]dependencymap.Dependency{"search_api": {Tools: []string{"search"}}}}

	t.Run("plugin alone does not see nested calls", func(t *testing.T) {
		deps := dependencymap.MustNew(depsCfg)
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
		_, sub, node := researchTree(t, search)
		subAgent, err := llmagent.New(node.AgentTools[0].Config)
		require.NoError(t, err)
		rootCfg := node.Config
		rootCfg.Tools = []tool.Tool{agenttool.New(subAgent, nil)}
		root, err := llmagent.New(rootCfg)
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
		sid, _ := h.NewSession(context.Background())
		for range 6 {
			_, err := h.Run(context.Background(), sid, "go")
			require.NoError(t, err)
		}
		b, _ := deps.Get("search_api")
		require.Zero(t, b.Snapshot().Window.Calls, "the nested runner has no plugins: six failures went unmeasured")
		require.Equal(t, breaker.Closed, b.State())
		require.Positive(t, sub.Calls())
	})

	t.Run("Build instruments the sub-agent", func(t *testing.T) {
		var gotMu atomicEvents
		deps := dependencymap.MustNew(depsCfg)
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{OnEvent: gotMu.add}})
		_, _, node := researchTree(t, search)
		root, err := cb.Build(node)
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
		sid, _ := h.NewSession(context.Background())
		before := runs.Load()
		var last *breakertest.Turn
		for range 6 {
			last, err = h.Run(context.Background(), sid, "go")
			require.NoError(t, err)
		}
		b, _ := deps.Get("search_api")
		require.Equal(t, breaker.Open, b.State(), "four failures tripped it")
		require.Equal(t, int64(4), runs.Load()-before, "the last two calls were short-circuited")
		require.Equal(t, "researcher said: search is unavailable", last.FinalText())
		require.NotEmpty(t, gotMu.get())
		s := cb.Stats()
		require.Zero(t, s.InFlight)
		require.Zero(t, s.Invocations, "the nested runs' state was freed when each agent-tool call returned")
		_, guarded := deps.Get("researcher")
		require.True(t, guarded, "the agent tool itself is a guarded dependency of the root agent")
	})
}

// atomicEvents collects events from many goroutines.
type atomicEvents struct{ e callbackstest.Events }

func (a *atomicEvents) add(ev callbacks.Event) { a.e.Add(ev) }
func (a *atomicEvents) get() []callbacks.Event {
	return a.e.All()
}

func TestModelCallbacksAreBundledAndRunOncePerCall(t *testing.T) {
	t.Parallel()
	var before, after, onErr atomic.Int64
	modelErr := errors.New("model endpoint down")
	mc := callbacks.ModelCallbacks{
		Before: func(agent.Context, *model.LLMRequest) (*model.LLMResponse, error) { before.Add(1); return nil, nil },
		After: func(agent.Context, *model.LLMResponse, error) (*model.LLMResponse, error) {
			after.Add(1)
			return nil, nil
		},
		OnError: func(_ agent.Context, _ *model.LLMRequest, err error) (*model.LLMResponse, error) {
			onErr.Add(1)
			require.ErrorIs(t, err, modelErr)
			return breakertest.Text("served by the fallback model").Response, nil
		},
	}
	deps := dependencymap.MustNew(dependencymap.Config{})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Model: mc})
	m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("lookup", map[string]any{}),
		breakertest.Fail(modelErr),
	}})
	// Both the plugin and agent-level callbacks on the same agent: still once each.
	a, err := llmagent.New(cb.Instrument(agentConfig("root", m, okTool(t, "lookup"))))
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, _ := h.NewSession(context.Background())
	turn, err := h.Run(context.Background(), sid, "go")
	require.NoError(t, err)
	require.Equal(t, "served by the fallback model", turn.FinalText())
	require.Equal(t, int64(2), before.Load(), "two model calls")
	require.Equal(t, int64(1), onErr.Load())
	require.Equal(t, int64(2), after.Load(), "the first response and the fallback's")
	b, _ := deps.Get("lookup")
	require.Equal(t, int64(1), b.Snapshot().Window.Calls, "the tool call was measured once, not once per layer")
	reqs := m.Requests()
	d, _ := reqs[0].Declaration("lookup")
	require.Contains(t, d.Description, "may return status")
	require.Zero(t, cb.Stats().InFlight)
	require.Zero(t, cb.Stats().Invocations)
}
