package tooltimeout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// boundedSet is a tool set whose calls are bounded by timeout, as an MCP tool set
// guarded by mcpguard is: its tools exist only once listed.
type boundedSet struct {
	name    string
	timeout time.Duration
}

func (s boundedSet) Name() string                                     { return s.name }
func (s boundedSet) Tools(agent.ReadonlyContext) ([]tool.Tool, error) { return nil, nil }
func (s boundedSet) Timeout() time.Duration                           { return s.timeout }

// plainSet is a tool set that says nothing of its calls' timeouts.
type plainSet struct{}

func (plainSet) Name() string                                     { return "plain" }
func (plainSet) Tools(agent.ReadonlyContext) ([]tool.Tool, error) { return nil, nil }

// Issue 48 (4): the turn check saw only TurnConfig.Tools, so the timeout of a tool set's
// tools (known only once listed) had to be entered by hand as Layers. A BoundedToolset
// in TurnConfig.Toolsets is checked at construction, before any listing.
func TestNewTurnChecksToolsets(t *testing.T) {
	t.Parallel()
	h := harness(t, nil)
	tests := []struct {
		name     string
		timeout  time.Duration
		toolsets []tool.Toolset
		wantErr  string
	}{
		{"tool set timeout longer than the turn", 20 * time.Second,
			[]tool.Toolset{plainSet{}, boundedSet{"payments", 30 * time.Second}},
			`TurnConfig.Toolsets[1] (tool set "payments", per-call timeout 30s) against TurnConfig.Timeout 20s: tooltimeout: layered timeouts do not fit: tool timeout 30s × 1 attempt = 30s, more than the turn budget 20s`},
		{"nil tool set", time.Minute, []tool.Toolset{nil}, "tooltimeout: TurnConfig.Toolsets[0] = nil"},
		{"tool set that fits", time.Minute, []tool.Toolset{boundedSet{"payments", 30 * time.Second}}, ""},
		{"unbounded tool set: nothing to check", time.Second, []tool.Toolset{boundedSet{"payments", 0}}, ""},
		{"tool set that says nothing: not checked", time.Second, []tool.Toolset{plainSet{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			turn, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: tt.timeout, Toolsets: tt.toolsets})
			if tt.wantErr != "" {
				require.Nil(t, turn)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, turn)
		})
	}
	t.Run("the error unwraps to ErrLayers", func(t *testing.T) {
		_, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: time.Second,
			Toolsets: []tool.Toolset{boundedSet{"payments", 2 * time.Second}}})
		require.ErrorIs(t, err, tooltimeout.ErrLayers)
	})
}
