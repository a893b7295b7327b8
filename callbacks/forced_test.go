package callbacks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// TestForcedOpenDoesNotCiteOldFailures: when an operator takes a dependency out of
// service, the model is not told it "has been returning server errors" because of a
// failure seen earlier.
func TestForcedOpenDoesNotCiteOldFailures(t *testing.T) {
	t.Parallel()
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(503))
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup_customer", URL: srv.URL})
	require.NoError(t, err)
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"lookup_customer"}},
	}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	model := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("lookup_customer", map[string]any{"query": "42"}),
		breakertest.Text("failed"),
		breakertest.Call("lookup_customer", map[string]any{"query": "42"}),
		breakertest.Text("down"),
	}})
	root, err := llmagent.New(llmagent.Config{Name: "a", Model: model, Tools: []tool.Tool{lookup}, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	ctx := context.Background()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)

	_, err = h.Run(ctx, sid, "first")
	require.NoError(t, err)
	crm, _ := deps.Get("crm")
	crm.ForceOpen("maintenance")
	turn, err := h.Run(ctx, sid, "second")
	require.NoError(t, err)
	p := turn.FunctionResponses()[0].Response
	require.Equal(t, "unavailable", p["status"])
	require.Equal(t, "crm is temporarily unavailable: it is not accepting requests right now.", p["reason"])
	require.Equal(t, "breaker_open", p["error_class"])
	require.EqualValues(t, 1, srv.Requests())
}
