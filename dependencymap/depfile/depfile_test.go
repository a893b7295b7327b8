package depfile

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/stretchr/testify/require"
)

// Issue 10 (j): the loader is documented as strict but accepted data after the
// configuration: JSON `{}0`, a second JSON object, a second YAML document.
func TestIssue10jLoaderRejectsTrailingData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, wantErr string
		yaml                bool
	}{
		{name: "json number after the object", body: `{}0`, wantErr: `line 1, column 3: unexpected data after the top-level value: "0"`},
		{name: "json second object", body: "{\"policy_version\": \"a\"}\n{\"policy_version\": \"b\"}", wantErr: "unexpected data after the top-level value"},
		{name: "json garbage", body: `{"exempt_tools": ["x"]} trailing`, wantErr: `"trailing"`},
		{name: "yaml second document", yaml: true, body: "policy_version: a\n---\npolicy_version: b\n", wantErr: "line 2: a second document starts here: want exactly one"},
		{name: "yaml second empty-ish document", yaml: true, body: "policy_version: a\n---\nfoo: [\n", wantErr: "after the first document: line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.yaml {
				_, err = ParseYAML([]byte(tt.body))
			} else {
				_, err = ParseJSON([]byte(tt.body))
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	// Whitespace after the value is fine, and so is a YAML document marker before the one document.
	_, err := ParseJSON([]byte("{}\n\n"))
	require.NoError(t, err)
	_, err = ParseYAML([]byte("---\npolicy_version: a\n"))
	require.NoError(t, err)
}

// Issue 10 (j): zero means "inherit", so one dependency could not switch off a gate the
// default policy turns on. `off` does it.
func TestIssue10jDependencyCanSwitchOffADefaultGate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, body string }{
		{"yaml", "default:\n  slow_call_threshold: 2s\n  window_calls: 50\ndependencies:\n  batch:\n    tools: [export]\n    policy:\n      slow_call_threshold: off\n      window_calls: off\n  crm:\n    tools: [lookup]\n"},
		{"json", `{"default": {"slow_call_threshold": "2s", "window_calls": 50}, "dependencies": {"batch": {"tools": ["export"], "policy": {"slow_call_threshold": "off", "window_calls": "off"}}, "crm": {"tools": ["lookup"]}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cfg dependencymap.Config
			var err error
			if tt.name == "yaml" {
				cfg, err = ParseYAML([]byte(tt.body))
			} else {
				cfg, err = ParseJSON([]byte(tt.body))
			}
			require.NoError(t, err)
			m := dependencymap.MustNew(cfg)
			crm, _ := m.Get("crm")
			require.Equal(t, 2*time.Second, crm.Policy().SlowCallThreshold, "crm inherits the default's slow-call gate")
			require.Equal(t, 50, crm.Policy().WindowCalls)
			batch, _ := m.Get("batch")
			require.LessOrEqual(t, batch.Policy().SlowCallThreshold, time.Duration(0), "batch switched it off")
			require.LessOrEqual(t, batch.Policy().WindowCalls, 0, "batch uses the time-based window")

			// Off really is off: a slow call does not count as slow for batch.
			p, err := batch.Allow()
			require.NoError(t, err)
			p.Success()
			require.Zero(t, batch.Snapshot().Window.SlowCalls)
		})
	}
	_, err := ParseYAML([]byte("default:\n  window_calls: lots\n"))
	require.ErrorContains(t, err, `line 2, column 17: default.window_calls = "lots": want a whole number of calls, or "off"`)
	_, err = ParseJSON([]byte(`{"default": {"window_calls": -3}}`))
	require.ErrorContains(t, err, "default.window_calls = -3: want a positive number of calls, or \"off\"")
	_, err = ParseYAML([]byte("default:\n  cooldown: off\n"))
	require.ErrorContains(t, err, `default.cooldown = "off": want a positive duration such as "30s"`)
}

// Issue 12: tool dependencies back off by default (the cooldown doubles per failed
// probe, capped); one can keep a fixed cooldown; the count window is selectable in the
// file.
func TestIssue12ToolCooldownGrowsByDefault(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	cfg, err := ParseYAML([]byte(`
default:
  minimum_calls: 1
  jitter: -1
dependencies:
  crm:
    tools: [lookup]
  ledger:
    tools: [post]
    policy:
      cooldown_multiplier: 1
  search:
    tools: [find]
    policy:
      window_calls: 20
      minimum_calls: 20
`))
	require.NoError(t, err)
	cfg.Clock = fc
	m := dependencymap.MustNew(cfg)
	waits := func(key string) []time.Duration {
		b, _ := m.Get(key)
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
		var out []time.Duration
		for range 5 {
			d := b.RetryAfter()
			out = append(out, d)
			fc.Advance(d)
			p, err := b.Allow()
			require.NoError(t, err)
			require.True(t, p.IsProbe())
			p.Failure()
		}
		return out
	}
	require.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute}, waits("crm"),
		"doubling, capped at MaxCooldown")
	require.Equal(t, []time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}, waits("ledger"))
	b, err := m.ForTool("invented_tool")
	require.NoError(t, err)
	require.EqualValues(t, 2, b.Policy().CooldownMultiplier, "on-demand tool breakers back off too")
	search, _ := m.Get("search")
	require.Equal(t, 20, search.Policy().WindowCalls)
	mb, err := m.ForModel("gemini", "eu")
	require.NoError(t, err)
	require.Equal(t, dependencymap.DefaultModelPolicy.CooldownMultiplier, mb.Policy().CooldownMultiplier, "model endpoints keep theirs")
}
