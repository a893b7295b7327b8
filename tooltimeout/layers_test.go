package tooltimeout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

func TestLayers(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		name    string
		l       tooltimeout.Layers
		want    time.Duration
		wantErr string
	}{
		{"tool alone", tooltimeout.Layers{ToolTimeout: 5 * s}, 5 * s, ""},
		{"fits everything", tooltimeout.Layers{ToolTimeout: 5 * s, Attempts: 3, Backoff: 1500 * time.Millisecond, SubAgent: 20 * s, Turn: 30 * s}, 16500 * time.Millisecond, ""},
		{"exactly fits", tooltimeout.Layers{ToolTimeout: 5 * s, Attempts: 2, SubAgent: 10 * s, Turn: 10 * s}, 10 * s, ""},
		{"sub-agent too small", tooltimeout.Layers{ToolTimeout: 5 * s, Attempts: 3, Backoff: 1500 * time.Millisecond, SubAgent: 10 * s}, 16500 * time.Millisecond,
			"tooltimeout: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s"},
		{"turn too small", tooltimeout.Layers{ToolTimeout: 5 * s, Turn: 4 * s}, 5 * s,
			"tooltimeout: layered timeouts do not fit: tool timeout 5s × 1 attempt = 5s, more than the turn budget 4s"},
		{"sub-agent outlives the turn", tooltimeout.Layers{ToolTimeout: s, SubAgent: 20 * s, Turn: 10 * s}, s,
			"tooltimeout: layered timeouts do not fit: sub-agent budget 20s is more than the turn budget 10s"},
		{"no tool timeout", tooltimeout.Layers{}, 0, "tooltimeout: Layers.ToolTimeout = 0s: must be positive"},
		{"negative attempts", tooltimeout.Layers{ToolTimeout: s, Attempts: -1}, s, "Layers.Attempts = -1"},
		{"negative backoff", tooltimeout.Layers{ToolTimeout: s, Backoff: -s}, 0, "Layers.Backoff = -1s"},
		{"negative sub-agent", tooltimeout.Layers{ToolTimeout: s, SubAgent: -s}, s, "Layers.SubAgent = -1s"},
		{"negative turn", tooltimeout.Layers{ToolTimeout: s, Turn: -s}, s, "Layers.Turn = -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.l.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, tt.l.Need())
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			if tt.want != 0 {
				require.Equal(t, tt.want, tt.l.Need())
			}
		})
	}
}
