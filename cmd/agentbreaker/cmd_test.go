package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// short is a small incident, so the tests stay quick under the race detector.
var short = []string{"-duration", "4m", "-outage-start", "1m", "-outage-end", "3m", "-turn-rate", "0.5", "-users", "15"}

func TestSimulateWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCmd(t, append([]string{"simulate", "-out", dir}, short...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"== naive", "== consecutive", "== agentbreaker-defaults", "== agentbreaker-policy",
		"!14:01", "calls in outage", "wrote " + filepath.Join(dir, "incident.png")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var sum struct {
		Strategies []struct {
			Name    string
			Summary map[string]any
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Strategies) != 4 {
		t.Fatalf("summary.json: %v, %d strategies", err, len(sum.Strategies))
	}
	for _, k := range []string{"calls_during_outage", "trip_after_onset_s", "probes_during_outage", "close_after_recovery_s",
		"outage_turns", "worker_seconds_hung"} {
		if _, ok := sum.Strategies[3].Summary[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	f, err := os.Open(filepath.Join(dir, "incident.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dy() < 800 {
		t.Fatalf("incident.png: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "incident.svg")); err != nil || !bytes.Contains(b, []byte("agentbreaker-policy: 50% failed of ≥20 calls")) {
		t.Fatalf("incident.svg: %v", err)
	}
}

func TestSimulateJSONIsDeterministic(t *testing.T) {
	args := append([]string{"simulate", "-quiet", "-json", "-", "-seed", "5"}, short...)
	_, a, _ := runCmd(t, args...)
	_, b, _ := runCmd(t, args...)
	if a == "" || a != b {
		t.Fatal("two runs with the same seed printed different JSON")
	}
}

func TestSimulateConfigAndFlags(t *testing.T) {
	code, out, errOut := runCmd(t, "simulate", "-quiet", "-json", "-", "-config", "testdata/scenario.yaml", "-users", "25")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var sum struct {
		Scenario map[string]any
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	s := sum.Scenario
	if s["users"] != 25.0 || s["seed"] != 3.0 || s["outage_mode"] != "error" || s["policy"].(map[string]any)["cooldown"] != "20s" {
		t.Errorf("scenario %v: want the file's values with -users over them", s)
	}
	// The user's policy from a dependency file.
	code, out, errOut = runCmd(t, append([]string{"simulate", "-quiet", "-json", "-", "-strategies", "agentbreaker-policy",
		"-deps", "../../dependencymap/depfile/testdata/agent.yaml", "-dependency", "crm"}, short...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"window": "10m"`) || !strings.Contains(out, `"minimum_calls": 10`) {
		t.Errorf("the crm policy (10m window, 10 calls) is not the one simulated:\n%s", out)
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("outage_error_rate: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"-users", "0"}, 2, []string{"-users", `"0"`}},
		{[]string{"-tool-timeout", "soon"}, 2, []string{"-tool-timeout", `"soon"`}},
		{[]string{"-outage-mode", "sideways"}, 1, []string{"outage_mode", "sideways", "-outage-mode"}},
		{[]string{"-outage-end", "30m"}, 1, []string{"outage_end", "30m", "-outage-end"}},
		{[]string{"-window", "5q"}, 1, []string{"policy.window", "5q"}},
		{[]string{"-strategies", "naive,hystrix"}, 1, []string{"strategies[1]", "hystrix"}},
		{[]string{"-config", bad}, 1, []string{"outage_error_rate", "2", bad}},
		{[]string{"-config", filepath.Join(dir, "missing.yaml")}, 1, []string{"missing.yaml"}},
		{[]string{"-deps", "../../dependencymap/depfile/testdata/agent.yaml", "-dependency", "nope"}, 1, []string{`"nope"`}},
		{[]string{"-nonsense"}, 2, []string{"-nonsense"}},
		{[]string{"extra"}, 1, []string{`"extra"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCmd(t, append([]string{"simulate", "-quiet"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not name %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestReplayCommand(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("timestamp,dependency,outcome,latency_ms\n")
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 900; i++ {
		at := start.Add(time.Duration(i) * 500 * time.Millisecond)
		outcome, lat := "SUCCEEDED", 100
		if i >= 240 && i < 600 {
			outcome, lat = "UNKNOWN", 5000
		} else if i%41 == 0 {
			outcome = "FAILED"
		}
		fmt.Fprintf(&b, "%s,crm,%s,%d\n", at.Format(time.RFC3339Nano), outcome, lat)
	}
	path := filepath.Join(dir, "calls.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "replay", "-sweep", "-window", "20s", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"crm: 900 calls; 1 outage(s): 2026-03-01 09:02:00–09:05:00", "tripped at 09:02:",
		"calls during the outage(s)", "tripped falsely 0 times", "sweep of 36 policies", "recommended: failure_rate_threshold"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(path, []byte("2026-03-01T09:00:00Z,crm,ok,fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, "replay", path)
	if code != 1 || !strings.Contains(errOut, `latency_ms "fast"`) || !strings.Contains(errOut, "line 1") {
		t.Errorf("exit %d, stderr %q: want the line, field and value", code, errOut)
	}
}

func TestLintCommand(t *testing.T) {
	code, out, _ := runCmd(t, "lint", "../../dependencymap/depfile/testdata/agent.yaml", "../../dependencymap/depfile/testdata/agent.json")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("good files: exit %d, %q", code, out)
	}
	code, out, _ = runCmd(t, "lint", "-timeouts", "testdata/timeouts.yaml", "testdata/bad-deps.yaml")
	if code != 1 {
		t.Errorf("bad file: exit %d, want 1", code)
	}
	for _, want := range []string{
		`error: dependencies.crm.policy.window = "soon"`,
		"Policy.FailureRateThreshold = 7",
		"warning: dependencies.enrich.policy.minimum_calls = 3",
		"tools.enrich = 5s: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s",
		"warning: tools.stray",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	// Warnings alone pass, unless -strict.
	dir := t.TempDir()
	warn := filepath.Join(dir, "warn.yaml")
	if err := os.WriteFile(warn, []byte("default:\n  minimum_calls: 2\ndependencies:\n  crm:\n    tools: [a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "lint", warn); code != 0 || !strings.Contains(out, "minimum_calls = 2") {
		t.Errorf("warnings only: exit %d, %q", code, out)
	}
	if code, _, _ := runCmd(t, "lint", "-strict", warn); code != 1 {
		t.Errorf("-strict with a warning: exit %d, want 1", code)
	}
	// A probe lease shorter than the tool's longest call.
	lease := filepath.Join(dir, "lease.yaml")
	to := filepath.Join(dir, "to.yaml")
	if err := os.WriteFile(lease, []byte("dependencies:\n  crm:\n    tools: [a]\n    policy:\n      probe_lease: 10s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, []byte("tools:\n  a: {timeout: 5s, attempts: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "lint", "-timeouts", to, lease); code != 1 || !strings.Contains(out, "probe_lease = 10s") {
		t.Errorf("short probe lease: exit %d, %q", code, out)
	}
}

func TestUsage(t *testing.T) {
	if code, _, errOut := runCmd(t); code != 2 || !strings.Contains(errOut, "simulate") {
		t.Errorf("no command: exit %d", code)
	}
	if code, _, errOut := runCmd(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `"frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
}

// The bar is drawn only on a terminal: into a buffer it stays silent.
func TestProgressOnlyOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	p.update(0.5, time.Hour)
	p.done()
	if buf.Len() != 0 {
		t.Errorf("drew %q into a non-terminal", buf.String())
	}
}

// The bar's drawing, as on a terminal: nothing in the first 0.3 s, then a bar that is
// redrawn only when the percentage changes, and cleared at the end.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, last: -1}
	p.update(0.1, 100*time.Millisecond)
	if buf.Len() != 0 {
		t.Fatalf("drew %q before %v", buf.String(), showAfter)
	}
	p.update(0.5, time.Second)
	p.update(0.501, time.Second)
	if got := buf.String(); strings.Count(got, "\r[") != 1 || !strings.Contains(got, " 50%") ||
		!strings.Contains(got, strings.Repeat("#", 20)+strings.Repeat(".", 20)) {
		t.Fatalf("bar %q", got)
	}
	p.done()
	if !strings.HasSuffix(buf.String(), "\r") {
		t.Errorf("bar not cleared: %q", buf.String())
	}
}
