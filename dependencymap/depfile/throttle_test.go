package depfile_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/throttle"
)

const throttleYAML = `
dependencies:
  search:
    tools: [web_search, suggest, checkout_lookup]
    throttle:
      k: 1.5
      min_requests: 10
      window: 20s
      buckets: 4
    priorities:
      suggest: low
      checkout_lookup: critical
  crm:
    tools: [lookup]
`

func TestThrottleFromTheDependencyFile(t *testing.T) {
	t.Parallel()
	cfg, err := depfile.ParseYAML([]byte(throttleYAML))
	require.NoError(t, err)
	got := cfg.Dependencies["search"]
	require.Equal(t, &throttle.Config{K: 1.5, MinRequests: 10, Window: 20 * time.Second, Buckets: 4}, got.Throttle)
	require.Equal(t, map[string]throttle.Priority{"suggest": throttle.Low, "checkout_lookup": throttle.Critical}, got.Priorities)
	require.Nil(t, cfg.Dependencies["crm"].Throttle, "opt-in: no throttle unless asked")

	m := dependencymap.MustNew(cfg)
	th := m.ThrottleFor("suggest")
	require.NotNil(t, th.Throttle)
	require.Equal(t, "search", th.Throttle.Name())
	require.Equal(t, throttle.Low, th.Priority)
	require.Equal(t, throttle.Normal, m.ThrottleFor("web_search").Priority)
	require.Equal(t, throttle.Critical, m.ThrottleFor("checkout_lookup").Priority)
	require.Nil(t, m.ThrottleFor("lookup").Throttle)
	// K from the file is the K in force: 10 requests, 4 accepted, p = (10-1.5·4)/11.
	for i := range 10 {
		th.Throttle.Report(i < 4)
	}
	require.InDelta(t, 4/11.0, th.Throttle.Probability(), 1e-9)

	_, err = depfile.ParseJSON([]byte(`{"dependencies": {"s": {"tools": ["a"], "throttle": {}}}}`))
	require.NoError(t, err, "an empty throttle object takes the defaults")
}

func TestThrottleBadInputInTheDependencyFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, wantErr string }{
		{"k", "dependencies:\n  s:\n    tools: [a]\n    throttle: {k: 0.5}\n", "dependencies.s.throttle.k = 0.5: must be a finite number of at least 1"},
		{"min_requests", "dependencies:\n  s:\n    tools: [a]\n    throttle: {min_requests: -1}\n", "dependencies.s.throttle.min_requests = -1"},
		{"window", "dependencies:\n  s:\n    tools: [a]\n    throttle: {window: soon}\n", `dependencies.s.throttle.window = "soon"`},
		{"buckets", "dependencies:\n  s:\n    tools: [a]\n    throttle: {buckets: -2}\n", "dependencies.s.throttle.buckets = -2"},
		{"priority name", "dependencies:\n  s:\n    tools: [a]\n    priorities: {a: urgent}\n", `dependencies.s.priorities.a = "urgent"`},
		{"priority of a stranger", "dependencies:\n  s:\n    tools: [a]\n    priorities: {b: low}\n", `dependencies.s.priorities.b = "b": not one of this dependency's tools`},
		{"unknown field", "dependencies:\n  s:\n    tools: [a]\n    throttle: {kk: 2}\n", "dependencies.s.throttle.kk: unknown key in dependencies.s.throttle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := depfile.ParseYAML([]byte(tt.body))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
