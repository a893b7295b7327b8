package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// internalNames is what the CLI must never print: Go names and package prefixes.
var internalNames = regexp.MustCompile(`Policy\.[A-Z]|Tools\[|Hosts\[|Models\[|main\.|depfile\.|(^|[\s(])(breaker|dependencymap|depfile|sim|tooltimeout|yaml|json): `)

func requireNoInternalNames(t *testing.T, out string) {
	t.Helper()
	if m := internalNames.FindString(out); m != "" {
		t.Errorf("output names %q, an internal name:\n%s", m, out)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLintGoodFiles(t *testing.T) {
	code, out, errOut := runCmd(t, "lint", "../../dependencymap/depfile/testdata/agent.yaml", "../../dependencymap/depfile/testdata/agent.json")
	if code != 0 || !strings.HasSuffix(out, ": ok\n") || errOut != "" {
		t.Errorf("good files: exit %d, %q, %q", code, out, errOut)
	}
}

// Every problem of the file is reported, each at its line and in the file's terms:
// three bad fields of one dependency, a misspelt key, and a volume gate that the
// top-level default sets is named as default's (it used to be named after a
// dependency that does not have the key).
func TestLintReportsEveryProblemAtItsLine(t *testing.T) {
	code, out, _ := runCmd(t, "lint", "-timeouts", "testdata/timeouts.yaml", "testdata/bad-deps.yaml")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := `testdata/bad-deps.yaml:4:3: warning: default.minimum_calls = 3: a volume gate below 5 trips on a handful of samples; widen the window instead
testdata/bad-deps.yaml:9:7: error: dependencies.crm.policy.window = "soon": want a positive duration such as "30s"
testdata/bad-deps.yaml:10:7: error: dependencies.crm.policy.failure_rate_threshold = 7: must be in (0, 1]
testdata/bad-deps.yaml:11:25: error: dependencies.crm.policy.half_open_probes = 0.5: want a whole number
testdata/bad-deps.yaml:14:5: error: dependencies.pay.polcy: unknown key in dependencies.pay: did you mean policy?
testdata/timeouts.yaml:4:3: error: tools.enrich: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s
testdata/timeouts.yaml:5:3: warning: tools.stray: not listed under any dependency of testdata/bad-deps.yaml: it gets a breaker of its own
testdata/bad-deps.yaml, testdata/timeouts.yaml: 5 errors, 2 warnings
`
	if out != want {
		t.Errorf("lint printed\n%s\nwant\n%s", out, want)
	}
	requireNoInternalNames(t, out)
}

func TestLintWarningsAlonePassUnlessStrict(t *testing.T) {
	warn := writeFile(t, "warn.yaml", "default:\n  minimum_calls: 2\ndependencies:\n  crm:\n    tools: [a]\n")
	if code, out, _ := runCmd(t, "lint", warn); code != 0 || !strings.Contains(out, ":2:3: warning: default.minimum_calls = 2") {
		t.Errorf("warnings only: exit %d, %q", code, out)
	}
	if code, _, _ := runCmd(t, "lint", "-strict", warn); code != 1 {
		t.Errorf("-strict with a warning: exit %d, want 1", code)
	}
}

func TestLintProbeLeaseShorterThanACall(t *testing.T) {
	lease := writeFile(t, "lease.yaml", "dependencies:\n  crm:\n    tools: [a]\n    policy:\n      probe_lease: 10s\n")
	to := writeFile(t, "to.yaml", "tools:\n  a: {timeout: 5s, attempts: 3}\n")
	code, out, _ := runCmd(t, "lint", "-timeouts", to, lease)
	if code != 1 || !strings.Contains(out, `:5:7: error: dependencies.crm.policy.probe_lease = 10s: shorter than a's longest call (15s = timeout 5s × 3 attempts + backoff 0s,`) {
		t.Errorf("short probe lease: exit %d, %q", code, out)
	}
	// Not set: its default (30s) is named as such, at the dependency.
	lease = writeFile(t, "lease.yaml", "dependencies:\n  crm:\n    tools: [a]\n")
	to = writeFile(t, "to.yaml", "tools:\n  a: {timeout: 20s, attempts: 2}\n")
	code, out, _ = runCmd(t, "lint", "-timeouts", to, lease)
	if code != 1 || !strings.Contains(out, ":2:3: error: dependencies.crm: probe_lease is not set, and its default 30s is shorter than a's longest call (40s") {
		t.Errorf("default probe lease: exit %d, %q", code, out)
	}
}

// A timeouts file is checked on its own, tools or none: `turn: soon` used to pass.
func TestLintTimeoutsFileIsCheckedCompletely(t *testing.T) {
	deps := "../../dependencymap/depfile/testdata/agent.yaml"
	tests := []struct{ name, body, want string }{
		{"turn.yaml", "turn: soon\n", `turn.yaml:1:7: error: turn = "soon": want a duration such as "5s"`},
		{"keys.yaml", "turn: 30s\ntool:\n  a: {timeout: 1s}\n", "keys.yaml:2:1: error: tool: unknown key; the keys are turn, sub_agent, tools"},
		{"tool.yaml", "tools:\n  a: {attempts: 0, backof: 1s}\n", "tool.yaml:2:17: error: tools.a.attempts = 0: want a whole number of at least 1"},
		{"missing.yaml", "tools:\n  a: {attempts: 2}\n", "missing.yaml:2:6: error: tools.a: timeout is missing"},
		{"t.json", "{\"turn\": \"30s\",\n \"tools\": {\"a\": {\"timeout\": \"1s\"}\n", "t.json:3:1: error: the file ends inside a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.name, tt.body)
			code, out, _ := runCmd(t, "lint", "-timeouts", path, deps)
			if code != 1 || !strings.Contains(out, filepath.Dir(path)+"/"+tt.want) {
				t.Errorf("exit %d, output\n%s\nwant a line with %q", code, out, tt.want)
			}
			requireNoInternalNames(t, out)
		})
	}
}

// Malformed JSON is located: it used to say "unexpected EOF" and nothing else.
func TestLintJSONErrorsHaveLineAndColumn(t *testing.T) {
	path := writeFile(t, "deps.json", "{\n  \"dependencies\": {\n    \"crm\": {\"tools\": [\"a\"]}\n")
	code, out, _ := runCmd(t, "lint", path)
	if code != 1 || !strings.Contains(out, path+":4:1: error: the file ends inside a value: an object, array or string is not closed") {
		t.Errorf("exit %d, %q", code, out)
	}
	path = writeFile(t, "deps.json", "{\"default\": {\"minimum_calls\": 5,}}\n")
	if code, out, _ := runCmd(t, "lint", path); code != 1 || !strings.Contains(out, path+":1:33: error: invalid character '}'") {
		t.Errorf("exit %d, %q", code, out)
	}
}

// Exit 2 and one line for a usage error; the usage only when asked for.
func TestExitCodesAndUsage(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdout     string // a substring; "" for nothing
		stderrLine string // the whole of stderr, when it is one line
	}{
		{args: []string{"lint", "-nonsense", "x.yaml"}, code: 2,
			stderrLine: `agentbreaker lint: flag provided but not defined: -nonsense (run "agentbreaker lint -h" for help)`},
		{args: []string{"lint"}, code: 2,
			stderrLine: `agentbreaker lint: want at least one dependency file (run "agentbreaker lint -h" for help)`},
		{args: []string{"replay", "-minimum-calls", "many", "x.csv"}, code: 2,
			stderrLine: `agentbreaker replay: invalid value "many" for flag -minimum-calls: not a whole number (run "agentbreaker replay -h" for help)`},
		{args: []string{"replay"}, code: 2,
			stderrLine: `agentbreaker replay: want one records file ("-" for standard input), got 0 arguments (run "agentbreaker replay -h" for help)`},
		{args: []string{"simulate", "-nonsense"}, code: 2,
			stderrLine: `agentbreaker simulate: flag provided but not defined: -nonsense (run "agentbreaker simulate -h" for help)`},
		{args: []string{"lint", "nope.yaml"}, code: 1, stderrLine: "agentbreaker lint: open nope.yaml: no such file or directory"},
		{args: []string{"help"}, code: 0, stdout: "usage: agentbreaker <command>"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if tt.stderrLine != "" && errOut != tt.stderrLine+"\n" {
				t.Errorf("stderr %q, want %q", errOut, tt.stderrLine+"\n")
			}
			if !strings.Contains(out, tt.stdout) || tt.stdout == "" && out != "" {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
		})
	}
	// -h prints the command's usage and exits 0.
	for _, cmd := range []string{"lint", "replay", "simulate", "tune", "generate"} {
		code, _, errOut := runCmd(t, cmd, "-h")
		if code != 0 || !strings.Contains(errOut, "usage: agentbreaker "+cmd) || !strings.Contains(errOut, "\n  -") {
			t.Errorf("%s -h: exit %d, %q", cmd, code, errOut)
		}
	}
	if code, _, errOut := runCmd(t); code != 2 || !strings.Contains(errOut, "simulate") {
		t.Errorf("no command: exit %d", code)
	}
	if code, _, errOut := runCmd(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `"frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
}
