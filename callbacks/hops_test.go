package callbacks_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/retry"
)

// One budget across hops (issue 33, Found 3): the root model calls a sub-agent whose
// search fails, then calls it again. The sub-agent answered in words, yet its call is
// FAILED, and the re-issue is the outer operation's second attempt; inside it, the
// search is the second attempt of the same inner operation (not attempt 1 of a new
// nested run), charged to search_api's retry budget. The second re-issue finds the
// budget spent (one retry per window on a quiet dependency).
func TestAgentToolReissueIsARetryOfBothOperations(t *testing.T) {
	t.Parallel()
	var searches atomic.Int64
	search := callbackstest.FnTool(t, "search", func(agent.Context, map[string]any) (map[string]any, error) {
		searches.Add(1)
		return nil, classify.StatusError(503, 0, "")
	})
	clk := clock.NewFake(replayStart)
	var attempts callbackstest.Attempts
	r := retry.MustNew(retry.Config{Clock: clk, Sleeper: &retry.FakeSleeper{}, OnAttempt: []func(context.Context, retry.Event){attempts.Add},
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: clk})})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: callbackstest.Policy,
		Dependencies: map[string]dependencymap.Dependency{"search_api": {Tools: []string{"search"}}}})
	cfg := callbacks.Config{Dependencies: deps, Clock: clk}
	cfg.SideEffects.Retry = r
	cb := callbacks.MustNew(cfg)
	_, _, node := researchTree(t, search)
	calls := 0
	node.Config.Model = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		calls++
		if calls <= 3 {
			return breakertest.Call("researcher", map[string]any{"request": "look"}) // the first call, two re-issues
		}
		return breakertest.Text("done")
	}})
	root, err := cb.Build(node)
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	_, err = h.Run(context.Background(), sid, "go")
	require.NoError(t, err)

	require.Equal(t, int64(2), searches.Load(), "the first search and the budget's one retry")
	var outer, inner []retry.Event
	for _, e := range attempts.List() {
		switch e.Tool {
		case "researcher":
			outer = append(outer, e)
		case "search":
			inner = append(inner, e)
		}
	}
	require.Len(t, outer, 3)
	require.Equal(t, 1, outer[0].Attempt)
	require.Equal(t, classify.Failed, outer[0].Outcome, "the sub-agent's words hid a failure: the call failed")
	require.Equal(t, 2, outer[1].Attempt, "the re-issue is the outer operation's next attempt")
	require.Equal(t, classify.Failed, outer[1].Outcome)
	require.Equal(t, retry.ReasonBudgetExhausted, outer[2].Stop, "the second re-issue is refused before the sub-agent runs")
	require.Len(t, inner, 2)
	require.Equal(t, []int{1, 2}, []int{inner[0].Attempt, inner[1].Attempt}, "one inner operation across the nested runs")
	require.Equal(t, inner[0].RequestID, inner[1].RequestID)
	require.Zero(t, cb.Stats().Invocations)
	require.Zero(t, r.Tracking(), "the root run's end forgot the operations of its nested runs too")
}

// An agent tool listed under the dependency its own tools use never takes that
// dependency's half-open probe: its inner call does, and the call's outcome decides.
func TestAgentToolOnItsInnerDependencyLeavesTheProbeToTheInnerCall(t *testing.T) {
	t.Parallel()
	var searches atomic.Int64
	search := callbackstest.FnTool(t, "search", func(agent.Context, map[string]any) (map[string]any, error) {
		searches.Add(1)
		return map[string]any{"status": "ok"}, nil
	})
	clk := clock.NewFake(replayStart)
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: callbackstest.Policy,
		Dependencies: map[string]dependencymap.Dependency{"search_api": {Tools: []string{"search", "researcher"}}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk})
	_, _, node := researchTree(t, search)
	root, err := cb.Build(node)
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	b, _ := deps.Get("search_api")
	callbackstest.Trip(t, b)
	clk.Advance(callbackstest.Policy.Cooldown)
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	turn, err := h.Run(context.Background(), sid, "go")
	require.NoError(t, err)
	require.Equal(t, int64(1), searches.Load(), "the inner call was the probe")
	require.Equal(t, "researcher said: found it", turn.FinalText())
	require.Equal(t, "closed", b.State().String(), "the probe's success closed it")
}

// Two different sub-agents called in one model response run on separate goroutines,
// and each calls the same tool with the same arguments: one operation of the root run.
// Under -race: the scope's records and the shared operation are safe. (One sub-agent
// called twice in parallel races inside adk-go's runner; ADK-NOTES trap 31.)
func TestParallelAgentToolsShareOneOperation(t *testing.T) {
	t.Parallel()
	var searches atomic.Int64
	search := callbackstest.FnTool(t, "search", func(agent.Context, map[string]any) (map[string]any, error) {
		searches.Add(1)
		return nil, classify.StatusError(503, 0, "")
	})
	clk := clock.NewFake(replayStart)
	r := retry.MustNew(retry.Config{Clock: clk, Sleeper: &retry.FakeSleeper{}, Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: clk})})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: callbackstest.Policy,
		Dependencies: map[string]dependencymap.Dependency{"search_api": {Tools: []string{"search"}}}})
	cfg := callbacks.Config{Dependencies: deps, Clock: clk}
	cfg.SideEffects.Retry = r
	cb := callbacks.MustNew(cfg)
	sub := func(name string) callbacks.AgentToolNode {
		m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(rq breakertest.Request) breakertest.Step {
			if len(rq.FunctionResponses()) > 0 {
				return breakertest.Text("no luck")
			}
			return breakertest.Call("search", map[string]any{"q": "acme"})
		}})
		return callbacks.AgentToolNode{Node: callbacks.Node{Config: llmagent.Config{Name: name, Description: "Searches.", Model: m, Tools: []tool.Tool{search}}}}
	}
	first := true
	root := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		if first {
			first = false
			return breakertest.Calls(
				&genai.FunctionCall{Name: "researcher_a", Args: map[string]any{"request": "look"}},
				&genai.FunctionCall{Name: "researcher_b", Args: map[string]any{"request": "look"}})
		}
		return breakertest.Text("done")
	}})
	a, err := cb.Build(callbacks.Node{Config: llmagent.Config{Name: "root", Model: root, Mode: llmagent.ModeChat},
		AgentTools: []callbacks.AgentToolNode{sub("researcher_a"), sub("researcher_b")}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	_, err = h.Run(context.Background(), sid, "go")
	require.NoError(t, err)
	// The first search, and the second only as the operation's retry (the budget's
	// floor), or refused as in flight while the first runs.
	require.GreaterOrEqual(t, searches.Load(), int64(1))
	require.LessOrEqual(t, searches.Load(), int64(2))
	require.Zero(t, cb.Stats().InFlight)
	require.Zero(t, cb.Stats().Invocations)
	require.Zero(t, r.Tracking())
}

// An agent tool under a root that agentbreaker does not see (no plugin, root not
// instrumented) still forgets the operations its nested runs tracked under the root.
func TestAgentToolUnderAnUnguardedRootForgetsItsOperations(t *testing.T) {
	t.Parallel()
	search := callbackstest.FnTool(t, "search", func(agent.Context, map[string]any) (map[string]any, error) {
		return nil, classify.StatusError(503, 0, "")
	})
	clk := clock.NewFake(replayStart)
	r := retry.MustNew(retry.Config{Clock: clk, Sleeper: &retry.FakeSleeper{}, Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: clk})})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: callbackstest.Policy,
		Dependencies: map[string]dependencymap.Dependency{"search_api": {Tools: []string{"search"}}}})
	cfg := callbacks.Config{Dependencies: deps, Clock: clk}
	cfg.SideEffects.Retry = r
	cb := callbacks.MustNew(cfg)
	_, _, node := researchTree(t, search)
	sub, err := llmagent.New(cb.Instrument(node.AgentTools[0].Config))
	require.NoError(t, err)
	rootCfg := node.Config
	rootCfg.Tools = []tool.Tool{cb.AgentTool(sub, nil)}
	root, err := llmagent.New(rootCfg)
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	_, err = h.Run(context.Background(), sid, "go")
	require.NoError(t, err)
	require.Zero(t, r.Tracking())
	require.Zero(t, cb.Stats().Invocations)
}

// A sub-agent reached by transfer_to_agent runs in the root's invocation: the runner
// plugin guards its tools (docs/agents.md, "Transfer"), and transfer_to_agent itself
// is exempt.
func TestTransferTargetsToolsAreGuardedByThePlugin(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	update := callbackstest.FnTool(t, "crm_update", func(agent.Context, map[string]any) (map[string]any, error) {
		runs.Add(1)
		return nil, classify.StatusError(503, 0, "")
	})
	deps := dependencymap.MustNew(dependencymap.Config{Default: callbackstest.Policy,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_update"}}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	billingModel := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("billing answered")
		}
		return breakertest.Call("crm_update", map[string]any{"id": "acme"})
	}})
	billing, err := llmagent.New(llmagent.Config{Name: "billing", Description: "Changes customer records.", Model: billingModel, Tools: []tool.Tool{update}})
	require.NoError(t, err)
	rootModel := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": "billing"})
	}})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{billing}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	for range 6 {
		sid, err := h.NewSession(context.Background())
		require.NoError(t, err)
		_, err = h.Run(context.Background(), sid, "update acme")
		require.NoError(t, err)
	}
	b, _ := deps.Get("crm")
	require.Equal(t, "open", b.State().String(), "the transfer target's failures counted")
	require.Equal(t, int64(callbackstest.Policy.MinimumCalls), runs.Load(), "then its calls were short-circuited")
	_, guarded := deps.Get("transfer_to_agent")
	require.False(t, guarded, "transfer_to_agent is a built-in: exempt")
}
