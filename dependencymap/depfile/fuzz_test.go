package depfile

import (
	"os"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/stretchr/testify/require"
)

// The loader reads files an operator wrote: whatever the bytes, it returns a Config that
// builds a Map, or an error that says where the problem is. It never panics.

func loaderSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(data)
	}
}

func checkLoaded(t *testing.T, cfg dependencymap.Config, err error) {
	if err != nil {
		require.True(t, strings.HasPrefix(err.Error(), "dependencymap: "), "error without the package prefix: %v", err)
		return
	}
	m, err := dependencymap.New(cfg)
	require.NoError(t, err, "a loaded configuration must build")
	for _, b := range m.Breakers() {
		require.NoError(t, b.Policy().Validate())
	}
}

func FuzzParseYAML(f *testing.F) {
	loaderSeeds(f, "testdata/agent.yaml", "testdata/agent.json")
	for _, s := range []string{"", "---\n", "a: 1\n---\nb: 2\n", "default:\n  window_calls: off\n  slow_call_threshold: off\n",
		"dependencies:\n  x:\n    tools: [a, a]\n", "default: {window: 1ns}\n", "unannotated: shared\n", "models: [{model: ''}]\n",
		"default:\n  failure_rate_threshold: .nan\n", "default:\n  window_calls: 99999999999999999999\n", "&a [*a]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseYAML(data)
		checkLoaded(t, cfg, err)
	})
}

func FuzzParseJSON(f *testing.F) {
	loaderSeeds(f, "testdata/agent.json")
	for _, s := range []string{"{}", "{}0", "{} {}", `{"default": {"window_calls": "off"}}`, `{"default": {"window_calls": 1e3}}`,
		`{"dependencies": {"": {}}}`, `{"max_dependencies": -1}`, `{"default": {"jitter": 0.99999}}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseJSON(data)
		checkLoaded(t, cfg, err)
	})
}
