package depfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/stretchr/testify/require"
)

func TestLoadYAMLAndJSONAgree(t *testing.T) {
	t.Parallel()
	y, err := Load("testdata/agent.yaml")
	require.NoError(t, err)
	j, err := Load("testdata/agent.json")
	require.NoError(t, err)
	require.Equal(t, y, j)
	require.Equal(t, 10*time.Minute, y.Dependencies["crm"].Policy.Window)
	require.Equal(t, 2*time.Second, y.Dependencies["weather"].Policy.SlowCallThreshold)
	m := dependencymap.MustNew(y)
	crm, _ := m.Get("crm")
	require.Equal(t, "2026-11-29.1", crm.Policy().Version)
	require.Equal(t, 30*time.Second, crm.Policy().Cooldown)
	w, _ := m.Get("weather")
	require.Equal(t, "weather-v2", w.Policy().Version)
	eu, _ := m.Get("gemini-2.5-flash@europe-west4")
	require.Equal(t, time.Minute, eu.Policy().Cooldown)
	require.Equal(t, 100, eu.Policy().MinimumCalls)
	require.Same(t, crm, m.ForHost("crm.internal:8443"))
}

func TestLoadRejectsBadFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, body, wantErr string
	}{
		{"unknown field", "a.yaml", "dependencies:\n  crm:\n    tools: [a]\n    polcy: {}\n", "line 4, column 5: dependencies.crm.polcy: unknown key in dependencies.crm: did you mean policy?"},
		{"bad duration", "a.yaml", "dependencies:\n  crm:\n    policy:\n      window: 90x\n",
			`line 4, column 7: dependencies.crm.policy.window = "90x": want a positive duration such as "30s"`},
		{"negative duration", "a.json", `{"default": {"cooldown": "-5s"}}`, `default.cooldown = "-5s"`},
		{"out of range", "a.yaml", "dependencies:\n  crm:\n    policy:\n      failure_rate_threshold: 1.5\n",
			`line 4, column 7: dependencies.crm.policy.failure_rate_threshold = 1.5: must be in (0, 1]`},
		{"bad unannotated", "a.yaml", "unannotated: everything\n", `unannotated = "everything"`},
		{"json unknown field", "a.json", `{"defaults": {}}`, `line 1, column 2: defaults: unknown key in the file: did you mean default?`},
		{"model policy", "a.yaml", "models:\n  - model: m\n    region: r\n    policy: {probe_lease: soon}\n",
			`line 4, column 14: models[0].policy.probe_lease = "soon"`},
		{"extension", "a.toml", "", `extension ".toml": want .yaml, .yml or .json`},
		{"wrong type", "a.yaml", "default:\n  minimum_calls: many\n", `line 2, column 18: default.minimum_calls = "many": want a whole number`},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+"-"+tt.file)
			require.NoError(t, os.WriteFile(path, []byte(tt.body), 0o600))
			_, err := Load(path)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	require.True(t, errors.Is(err, os.ErrNotExist))
	cfg, err := ParseYAML(nil)
	require.NoError(t, err, "an empty file means all defaults")
	require.NotNil(t, dependencymap.MustNew(cfg))
}
