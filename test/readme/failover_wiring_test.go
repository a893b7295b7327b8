package readme_test

// What docs/model-failover.md and docs/tools.md say about the two ways to wire model
// failover into an agent tree with a sub-agent called as a tool: the Failover as the
// agents' model, or its callbacks bundled into the plugin (callbacks.Config.Model).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// wiringFailover is a failover whose primary is served by primary (nil on the callbacks
// path, where the agent's own model serves it).
func wiringFailover(deps *dependencymap.Map, primary model.LLM) *modelfailover.Failover {
	fallback := breakertest.MustNewModel(breakertest.ModelConfig{Name: "fallback",
		Then: func(breakertest.Request) breakertest.Step { return breakertest.Text("from the fallback") }})
	return modelfailover.MustNew(modelfailover.Config{Breakers: deps, Routes: []modelfailover.Route{
		{Model: "gemini-2.5-pro", Region: "us-central1", LLM: primary},
		{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: fallback},
	}})
}

// researcherConfig is the sub-agent called as a tool, on model m.
func researcherConfig(m model.LLM) llmagent.Config {
	return llmagent.Config{Name: "researcher", Description: "Looks things up.", Model: m}
}

func runTurn(t *testing.T, root agent.Agent, plugins ...*plugin.Plugin) {
	t.Helper()
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: plugins})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	turn, err := h.Run(context.Background(), sid, "go")
	require.NoError(t, err)
	require.Empty(t, turn.Errs)
	require.Equal(t, "done", turn.FinalText())
}

// TestFailoverWiringsWithAnAgentTool: the root agent calls a sub-agent as a tool, and
// the sub-agent answers; three model calls in all, two of the root and one of the
// sub-agent.
func TestFailoverWiringsWithAnAgentTool(t *testing.T) {
	t.Parallel()
	askResearcher := breakertest.Call("researcher", map[string]any{"request": "find it"})

	t.Run("the Failover as the model of every agent: every call, with or without Build", func(t *testing.T) {
		t.Parallel()
		deps := dependencymap.MustNew(dependencymap.Config{})
		primary := breakertest.MustNewModel(breakertest.ModelConfig{Name: "gemini-2.5-pro", Steps: []breakertest.Step{
			askResearcher, breakertest.Text("found it"), breakertest.Text("done")}})
		failover := wiringFailover(deps, primary)
		guard := callbacks.MustNew(callbacks.Config{Dependencies: deps})
		// A plain agenttool, no Build: the sub-agent's model is the failover itself.
		sub, err := llmagent.New(researcherConfig(failover))
		require.NoError(t, err)
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: failover, Tools: []tool.Tool{agenttool.New(sub, nil)}})
		require.NoError(t, err)
		runTurn(t, root, guard.Plugin())
		require.Equal(t, uint64(3), failover.Stats().Window.Calls, "the sub-agent's call went through the failover too")
	})

	t.Run("the Failover as the root's model only: a sub-agent on its own model stays on it", func(t *testing.T) {
		t.Parallel()
		deps := dependencymap.MustNew(dependencymap.Config{})
		primary := breakertest.MustNewModel(breakertest.ModelConfig{Name: "gemini-2.5-pro", Steps: []breakertest.Step{
			askResearcher, breakertest.Text("done")}})
		small := breakertest.MustNewModel(breakertest.ModelConfig{Name: "small", Steps: []breakertest.Step{breakertest.Text("found it")}})
		failover := wiringFailover(deps, primary)
		guard := callbacks.MustNew(callbacks.Config{Dependencies: deps})
		root, err := guard.Build(callbacks.Node{
			Config:     llmagent.Config{Name: "assistant", Model: failover},
			AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{Config: researcherConfig(small)}}},
		})
		require.NoError(t, err)
		runTurn(t, root, guard.Plugin())
		require.Equal(t, uint64(2), failover.Stats().Window.Calls)
		require.Equal(t, "small", small.Requests()[0].Model, "the sub-agent's own model, untouched")
	})

	t.Run("callbacks.Config.Model with Build: every agent of the tree, on the primary's name", func(t *testing.T) {
		t.Parallel()
		deps := dependencymap.MustNew(dependencymap.Config{})
		own := breakertest.MustNewModel(breakertest.ModelConfig{Name: "own", Steps: []breakertest.Step{
			askResearcher, breakertest.Text("done")}})
		small := breakertest.MustNewModel(breakertest.ModelConfig{Name: "small", Steps: []breakertest.Step{breakertest.Text("found it")}})
		failover := wiringFailover(deps, nil)
		guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Model: callbacks.ModelCallbacks{
			Before: failover.BeforeModel, After: failover.AfterModel, OnError: failover.OnModelError}})
		root, err := guard.Build(callbacks.Node{
			Config:     llmagent.Config{Name: "assistant", Model: own},
			AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{Config: researcherConfig(small)}}},
		})
		require.NoError(t, err)
		runTurn(t, root, guard.Plugin())
		require.Equal(t, uint64(3), failover.Stats().Window.Calls, "the sub-agent's call went through the failover")
		require.Equal(t, "gemini-2.5-pro", small.Requests()[0].Model, "the sub-agent's client was asked for the primary's model")
		require.Equal(t, "gemini-2.5-pro", own.Requests()[0].Model)
	})

	t.Run("callbacks.Config.Model without Build: the agent tool's calls bypass the failover", func(t *testing.T) {
		t.Parallel()
		deps := dependencymap.MustNew(dependencymap.Config{})
		own := breakertest.MustNewModel(breakertest.ModelConfig{Name: "own", Steps: []breakertest.Step{
			askResearcher, breakertest.Text("done")}})
		small := breakertest.MustNewModel(breakertest.ModelConfig{Name: "small", Steps: []breakertest.Step{breakertest.Text("found it")}})
		failover := wiringFailover(deps, nil)
		guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Model: callbacks.ModelCallbacks{
			Before: failover.BeforeModel, After: failover.AfterModel, OnError: failover.OnModelError}})
		sub, err := llmagent.New(researcherConfig(small))
		require.NoError(t, err)
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: own, Tools: []tool.Tool{agenttool.New(sub, nil)}})
		require.NoError(t, err)
		runTurn(t, root, guard.Plugin())
		require.Equal(t, uint64(2), failover.Stats().Window.Calls, "the nested runner has no plugins")
		require.Equal(t, "small", small.Requests()[0].Model)
	})
}

// TestFailoverWiringIsSaidTheSameOnBothPages keeps docs/tools.md and
// docs/model-failover.md from disagreeing again on which wiring to use (issue 48): the
// paragraph that says it is the same, word for word, on both.
func TestFailoverWiringIsSaidTheSameOnBothPages(t *testing.T) {
	t.Parallel()
	var paragraphs []string
	for _, page := range []string{"tools.md", "model-failover.md"} {
		text, err := os.ReadFile(filepath.Join(repoRoot, "docs", page))
		require.NoError(t, err)
		start := strings.Index(string(text), "**Which wiring, with `guard.Build` and sub-agents.**")
		require.GreaterOrEqual(t, start, 0, "%s: no paragraph on which failover wiring to use", page)
		p, _, _ := strings.Cut(string(text[start:]), "\n\n")
		paragraphs = append(paragraphs, p)
	}
	require.Equal(t, paragraphs[0], paragraphs[1], "docs/tools.md and docs/model-failover.md say it differently")
}
