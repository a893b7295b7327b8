package depfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

func readDoc(t *testing.T, name, body string) *depfile.Document {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	d, err := depfile.Read(path)
	require.NoError(t, err)
	return d
}

func problemStrings(d *depfile.Document) []string {
	var out []string
	for _, p := range d.Problems {
		out = append(out, p.String())
	}
	return out
}

// Every problem of a file is reported, each with the path the file spells and its
// line: three bad fields of one dependency give three problems, and a value the
// dependency inherits from the top-level default is named as default's.
func TestReadReportsEveryProblemInTheFilesTerms(t *testing.T) {
	t.Parallel()
	d := readDoc(t, "deps.yaml", `default:
  minimum_calls: -4
dependencies:
  enrich:
    tools: [enrich, ""]
    policy:
      failure_rate_threshold: 7
      window: soon
      half_open_probes: 500
      polcy: x
  crm:
    tools: [enrich]
`)
	require.Equal(t, []string{
		`line 2, column 3: default.minimum_calls = -4: must be at least 1`,
		`line 5, column 13: dependencies.enrich.tools[0] = "enrich": already listed under dependencies.crm: a tool belongs to one dependency`,
		`line 5, column 21: dependencies.enrich.tools[1] = "": a tool name is empty`,
		`line 7, column 7: dependencies.enrich.policy.failure_rate_threshold = 7: must be in (0, 1]`,
		`line 8, column 7: dependencies.enrich.policy.window = "soon": want a positive duration such as "30s"`,
		`line 9, column 7: dependencies.enrich.policy.half_open_probes = 500: must be between 1 and 100`,
		`line 10, column 7: dependencies.enrich.policy.polcy: unknown key in dependencies.enrich.policy; the keys are failure_rate_threshold, minimum_calls, window, buckets, window_calls, slow_call_threshold, slow_call_rate_threshold, cooldown, cooldown_multiplier, max_cooldown, jitter, half_open_probes, probe_lease, max_retry_after, version, shadow`,
	}, problemStrings(d))
	_, err := d.Config()
	var fe *depfile.Error
	require.ErrorAs(t, err, &fe)
	require.Len(t, fe.Problems, len(d.Problems))
	var ce *agentbreaker.ConfigError
	require.ErrorAs(t, err, &ce, "each problem is also a ConfigError")
	require.NotContains(t, err.Error(), "Policy.", "no Go field names")
}

// A value the file does not set is never given a path the file does not have: a
// problem with a built-in default names the policy it applies in.
func TestBuiltInDefaultProblemNamesAnExistingPath(t *testing.T) {
	t.Parallel()
	// buckets 60 over the default window (60s) is fine; over window 2s it makes
	// buckets of 33ms.
	d := readDoc(t, "deps.yaml", "default:\n  buckets: 60\ndependencies:\n  crm:\n    policy:\n      window: 2s\n")
	require.Equal(t, []string{
		`line 2, column 3: default.buckets = 60: makes buckets shorter than 50ms for a window of 2s (in the policy dependency crm inherits)`,
	}, problemStrings(d))
	d = readDoc(t, "deps.yaml", "dependencies:\n  crm:\n    policy:\n      cooldown: 10m\n      max_cooldown: 5m\n")
	require.Equal(t, []string{
		`line 5, column 7: dependencies.crm.policy.max_cooldown = "5m": must be between cooldown (10m0s) and 24h`,
	}, problemStrings(d))
}

// Malformed JSON is located by line and column, an unclosed object included (it
// used to say "unexpected EOF" and nothing else).
func TestJSONErrorsHaveLineAndColumn(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{"{\n  \"default\": {\"minimum_calls\": 5}\n", "line 3, column 1: the file ends inside a value: an object, array or string is not closed"},
		{"{\n  \"default\": {\"minimum_calls\": 5,}\n}", "line 2, column 34: invalid character '}' looking for beginning of object key string"},
		{"{\n  \"default\": {\"minimum_calls\": \"5\"}\n}", `line 2, column 32: default.minimum_calls = "5": want a whole number`},
		{"{\n  \"dependencies\": {\"crm\": {\"tools\": [\"a\"], \"hosts\": 3}}\n}", `line 2, column 53: dependencies.crm.hosts = 3: want an array`},
		{"", "the file is empty: want a JSON object"},
	}
	for _, tt := range tests {
		d := readDoc(t, "deps.json", tt.body)
		require.Equal(t, []string{tt.want}, problemStrings(d), tt.body)
	}
}

// The document remembers where each key is and which key sets a dependency's policy
// field, for tools that report on valid files too (agentbreaker lint's warnings).
func TestDocumentPositionsAndPolicySource(t *testing.T) {
	t.Parallel()
	d := readDoc(t, "deps.yaml", "default:\n  minimum_calls: 3\ndependencies:\n  crm:\n    tools: [a]\n  pay:\n    tools: [b]\n    policy:\n      minimum_calls: 4\n")
	require.NoError(t, d.Err())
	require.Equal(t, "default.minimum_calls", d.PolicySource("crm", "minimum_calls"))
	require.Equal(t, "dependencies.pay.policy.minimum_calls", d.PolicySource("pay", "minimum_calls"))
	require.Empty(t, d.PolicySource("crm", "window"))
	line, col := d.Position("dependencies.pay.policy.minimum_calls")
	require.Equal(t, [2]int{9, 7}, [2]int{line, col})
	line, _ = d.Position("dependencies.crm.policy.minimum_calls") // not in the file: its nearest key
	require.Equal(t, 4, line)
	_, err := depfile.Read(filepath.Join(t.TempDir(), "missing.yaml"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

// A fraction where a whole number is wanted is an error: the YAML decoder alone
// truncates half_open_probes: 0.5 to 0, which would silently mean "inherit".
func TestFractionForACountIsAnError(t *testing.T) {
	t.Parallel()
	d := readDoc(t, "deps.yaml", "default:\n  half_open_probes: 0.5\n  window_calls: 2.5\n")
	require.Equal(t, []string{
		`line 2, column 21: default.half_open_probes = 0.5: want a whole number`,
		`line 3, column 17: default.window_calls = 2.5: want a whole number of calls, or "off"`,
	}, problemStrings(d))
}
