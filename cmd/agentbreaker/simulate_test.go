package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// scenarioKeys are the keys of a scenario file, the policy's without their prefix (their
// flags are -window, -cooldown, …), read from the struct tags.
func scenarioKeys() []string {
	var keys []string
	for _, typ := range []reflect.Type{reflect.TypeFor[sim.Scenario](), reflect.TypeFor[depfile.Policy]()} {
		for i := range typ.NumField() {
			// shadow: a scenario refuses it (the simulator runs policies that act).
			if key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); key != "policy" && key != "shadow" {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// TestEveryKeyHasAFlag: each key of a scenario file has a flag that sets the scenario the
// file's key does (sim's TestEveryKeyChangesTheRun shows each key changes the run).
func TestEveryKeyHasAFlag(t *testing.T) {
	values := map[string]string{
		"seed": "2", "duration": "5m", "users": "40", "turn_rate": "1.5", "dependency": "crm", "latency": "1s",
		"error_rate": "0.2", "outage_start": "90s", "outage_end": "150s", "outage_error_rate": "0.6",
		"outage_mode": "error", "error_latency": "2s", "retry_after": "1m", "model_latency": "3s", "sub_agents": "4",
		"client_attempts": "1", "client_backoff": "2s", "reissues": "0", "reissue_after_error": "0.2",
		"reissue_after_unavailable": "1", "tool_timeout": "2s", "turn_timeout": "8s", "bulkhead": "2",
		"strategies":             "naive,agentbreaker-policy",
		"failure_rate_threshold": "0.9", "minimum_calls": "5", "window_calls": "off", "window": "10s", "buckets": "2",
		"slow_call_threshold": "250ms", "slow_call_rate_threshold": "0.9", "cooldown": "45s",
		"cooldown_multiplier": "2", "max_cooldown": "2m", "jitter": "-1", "half_open_probes": "3",
		"probe_lease": "1s", "max_retry_after": "10s", "version": "v2",
	}
	policyKeys := map[string]bool{}
	pt := reflect.TypeFor[depfile.Policy]()
	for i := range pt.NumField() {
		k, _, _ := strings.Cut(pt.Field(i).Tag.Get("yaml"), ",")
		policyKeys[k] = true
	}
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	for _, f := range scenarioFlags {
		fs.String(flagName(f.key), "", "")
	}
	var args []string
	var file strings.Builder
	var pol strings.Builder
	for _, key := range scenarioKeys() {
		v, ok := values[key]
		if !ok {
			t.Fatalf("no value listed for the key %s", key)
		}
		if fs.Lookup(flagName(key)) == nil {
			t.Errorf("no flag -%s for the scenario key %s", flagName(key), key)
			continue
		}
		args = append(args, "-"+flagName(key), v)
		if key == "strategies" {
			v = "[" + v + "]"
		}
		if policyKeys[key] {
			pol.WriteString("  " + key + ": " + v + "\n")
		} else {
			file.WriteString(key + ": " + v + "\n")
		}
	}
	// All flags at once, against all keys at once: the same scenario.
	dir := t.TempDir()
	path := filepath.Join(dir, "all.yaml")
	if err := os.WriteFile(path, []byte(file.String()+"policy:\n"+pol.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := sim.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	var got sim.Scenario
	for _, f := range scenarioFlags {
		i := indexOf(args, "-"+flagName(f.key))
		if err := f.set(&got, args[i+1]); err != nil {
			t.Fatalf("-%s %s: %v", flagName(f.key), args[i+1], err)
		}
	}
	got = got.WithDefaults()
	a, _ := json.Marshal(fromFile)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("flags give\n%s\nthe file gives\n%s", b, a)
	}
	if len(scenarioFlags) != len(scenarioKeys()) {
		t.Errorf("%d scenario flags for %d keys", len(scenarioFlags), len(scenarioKeys()))
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestQuietKeepsTheSummary is a regression test: -quiet once hid the summary too.
func TestQuietKeepsTheSummary(t *testing.T) {
	code, out, errOut := runCmd(t, append([]string{"simulate", "-quiet"}, short...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "calls in outage") || !strings.Contains(out, "agentbreaker-policy: agentbreaker callbacks:") {
		t.Errorf("-quiet hid the summary:\n%s", out)
	}
	if strings.Contains(out, "14:02") || strings.Contains(out, "== ") {
		t.Errorf("-quiet printed the timeline:\n%s", out)
	}
}

// TestScenarioFileErrorsPointAtTheKey: a malformed or wrong file names the file, the
// line and column, and the key's path in the file, with no package prefix.
func TestScenarioFileErrorsPointAtTheKey(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, body, want string }{
		{"bad.json", "{\n  \"users\": 3,\n  \"policy\": {\"window\": \"5m\"\n", "bad.json:3:28: malformed JSON"},
		{"trailing.json", "{\n  \"users\": 3,\n}\n", "trailing.json:3:1: malformed JSON"},
		{"type.json", "{\"policy\": {\"minimum_calls\": \"many\"}}", `type.json:1:30: policy.minimum_calls = "many": want a whole number`},
		{"unknown.yaml", "users: 3\npolicy:\n  windw: 5m\n", "unknown.yaml:3:3: unknown key policy.windw (did you mean window?)"},
		{"value.yaml", "users: 3\npolicy:\n  window: soon\n", `value.yaml:3:11: policy.window = "soon": want a positive duration`},
		{"range.yaml", "outage_error_rate: 2\n", "range.yaml:1:20: outage_error_rate = 2: must be from 0 to 1 (flag -outage-error-rate)"},
		{"strategy.yaml", "strategies: [naive, hystrix]\n", "strategy.yaml:1:21: strategies[1] = hystrix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCmd(t, "simulate", "-quiet", "-config", path)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q: want %q", code, errOut, tt.want)
			}
			if strings.Contains(errOut, "sim:") || strings.Contains(errOut, "yaml: ") || strings.Contains(errOut, "scenarioFile") {
				t.Errorf("stderr %q: an internal prefix or type", errOut)
			}
		})
	}
}

var _ = io.Discard

// TestWindowFlagsChangeTheRun is a regression test: -window 1s, 20s and 5m once gave the
// same run (the count window of the default policy ignored them) while the header echoed
// the flag; -minimum-calls 50 was accepted and capped at 20 without a word.
func TestWindowFlagsChangeTheRun(t *testing.T) {
	seen := map[string]string{}
	for _, w := range []string{"5s", "20s", "5m"} {
		code, out, errOut := runCmd(t, append([]string{"simulate", "-quiet", "-strategies", "agentbreaker-policy", "-window", w}, short...)...)
		if code != 0 {
			t.Fatalf("-window %s: exit %d: %s", w, code, errOut)
		}
		if !strings.Contains(out, "in a time window of the last "+w) {
			t.Errorf("-window %s: the header does not say the window ran:\n%s", w, out)
		}
		table := out[strings.Index(out, "strategy"):]
		for prev, other := range seen {
			if other == table {
				t.Errorf("-window %s ran the same as -window %s:\n%s", w, prev, table)
			}
		}
		seen[w] = table
	}
	code, _, errOut := runCmd(t, append([]string{"simulate", "-quiet", "-minimum-calls", "50"}, short...)...)
	if code != 1 || !strings.Contains(errOut, "policy.minimum_calls = 50") || !strings.Contains(errOut, "window_calls") {
		t.Errorf("-minimum-calls 50 over a count window of 20: exit %d, %q", code, errOut)
	}
	code, out, errOut := runCmd(t, append([]string{"simulate", "-quiet", "-strategies", "agentbreaker-policy", "-window-calls", "off", "-minimum-calls", "50"}, short...)...)
	if code != 0 || !strings.Contains(out, "≥50 calls in a time window of the last 1m") {
		t.Errorf("-window-calls off -minimum-calls 50: exit %d, %s%s", code, out, errOut)
	}
}
