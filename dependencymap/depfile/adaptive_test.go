package depfile_test

import (
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/throttle"
)

const adaptiveYAML = `
dependencies:
  search:
    tools: [web_search, suggest]
    adaptive:
      min_limit: 3
      max_limit: 50
      initial_limit: 10
      tolerance: 0.5
      update_interval: 1s
      min_samples: 4
      no_load_interval: 2m
    priorities:
      suggest: low
  crm:
    tools: [lookup]
models:
  - model: gemini-2.5-flash
    region: us-central1
    adaptive: {}
`

func TestAdaptiveLimitFromTheDependencyFile(t *testing.T) {
	t.Parallel()
	cfg, err := depfile.ParseYAML([]byte(adaptiveYAML))
	require.NoError(t, err)
	require.Equal(t, &adaptivelimit.Config{MinLimit: 3, MaxLimit: 50, InitialLimit: 10, Tolerance: 0.5,
		UpdateInterval: time.Second, MinSamples: 4, NoLoadInterval: 2 * time.Minute}, cfg.Dependencies["search"].Adaptive)
	require.Nil(t, cfg.Dependencies["crm"].Adaptive, "opt-in: no limit unless asked")
	require.Equal(t, &adaptivelimit.Config{}, cfg.Models[0].Adaptive, "an empty block takes the defaults")

	m := dependencymap.MustNew(cfg)
	l := m.Limiter("search")
	require.NotNil(t, l)
	require.Equal(t, "search", l.Name())
	require.Equal(t, 10, l.Limit())
	lo, hi := l.Bounds()
	require.Equal(t, [2]int{3, 50}, [2]int{lo, hi})
	require.Nil(t, m.Limiter("crm"))
	ml := m.Limiter(dependencymap.ModelKey("gemini-2.5-flash", "us-central1"))
	require.NotNil(t, ml)
	require.Equal(t, adaptivelimit.DefaultInitialLimit, ml.Limit())
	require.Len(t, m.Limiters(), 2)
	// The priorities the throttle reads are the limit's too.
	require.Equal(t, throttle.Low, m.ThrottleFor("suggest").Priority)
}

func TestAdaptiveBadInputInTheDependencyFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, wantErr string }{
		{"min over max", "dependencies:\n  s:\n    tools: [a]\n    adaptive: {min_limit: 9, max_limit: 4}\n", "dependencies.s.adaptive.min_limit = 9: must be from 1 to MaxLimit"},
		{"tolerance", "dependencies:\n  s:\n    tools: [a]\n    adaptive: {tolerance: -1}\n", "dependencies.s.adaptive.tolerance = -1"},
		{"interval", "dependencies:\n  s:\n    tools: [a]\n    adaptive: {update_interval: soon}\n", `dependencies.s.adaptive.update_interval = "soon"`},
		{"no-load interval", "dependencies:\n  s:\n    tools: [a]\n    adaptive: {no_load_interval: 10ms}\n", "dependencies.s.adaptive.no_load_interval = 10ms: must be from 1s to 24h"},
		{"model", "models:\n  - model: m\n    adaptive: {max_limit: 0, min_samples: -1}\n", "models[0].adaptive.min_samples = -1"},
		{"unknown field", "dependencies:\n  s:\n    tools: [a]\n    adaptive: {limit: 2}\n", "dependencies.s.adaptive.limit: unknown key in dependencies.s.adaptive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := depfile.ParseYAML([]byte(tt.body))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// docs/adaptive-concurrency.md's file block loads, with the values it states.
func TestAdaptivePageFileBlockLoads(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/adaptive-concurrency.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(page)
	require.NotNil(t, m, "the page has a yaml block")
	cfg, err := depfile.ParseYAML(m[1])
	require.NoError(t, err)
	require.Equal(t, &adaptivelimit.Config{MinLimit: 2, MaxLimit: 50, InitialLimit: 10, Tolerance: 0.4,
		UpdateInterval: 500 * time.Millisecond, MinSamples: 10, NoLoadInterval: time.Minute}, cfg.Dependencies["search"].Adaptive)
	require.Equal(t, throttle.Low, cfg.Dependencies["search"].Priorities["suggest"])
	require.Equal(t, &adaptivelimit.Config{}, cfg.Models[0].Adaptive)
}
