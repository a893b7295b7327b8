package main

import (
	"bytes"
	"encoding/json"
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
