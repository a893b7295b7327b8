package mcpguard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Issue 48 (4): an MCP tool set's tools are known only once listed, so the turn check
// could not see their timeout and it was entered by hand. The guarded tool set is a
// tooltimeout.BoundedToolset: given in TurnConfig.Toolsets, its per-call timeout is
// checked against the turn deadline before the server is ever contacted (the
// endpoint here refuses every connection).
func TestTurnCheckSeesTheToolsetTimeout(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration // mcpguard.Config.Timeout
		turn    time.Duration
		wantErr string
	}{
		{"default 30s in a 20s turn", 0, 20 * time.Second,
			`(tool set "mcp_tool_set", per-call timeout 30s) against TurnConfig.Timeout 20s: tooltimeout: layered timeouts do not fit: tool timeout 30s × 1 attempt = 30s, more than the turn budget 20s`},
		{"default 30s in a 60s turn", 0, time.Minute, ""},
		{"5s in a 20s turn", 5 * time.Second, 20 * time.Second, ""},
		{"no per-call timeout: nothing to check", -1, time.Second, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{})})
			ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Timeout: tt.timeout,
				Toolset: mcptoolset.Config{Endpoint: "http://127.0.0.1:1/mcp"}})
			t.Cleanup(func() { ts.Close() })
			toolsets := []tool.Toolset{ts}
			a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: breakertest.MustNewModel(breakertest.ModelConfig{}), Toolsets: toolsets})
			require.NoError(t, err)
			h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})

			turn, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: tt.turn, Toolsets: toolsets})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, tooltimeout.ErrLayers)
				require.Nil(t, turn)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, turn)
			require.Zero(t, ts.Stats(), "the check lists nothing")
		})
	}
}
