package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestReplayCommand(t *testing.T) {
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
	path := writeFile(t, "calls.csv", b.String())
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
}

// The library's own records replay: the sample the docs use reads, and the policy
// replayed by default is what the plugin gives a tool (the cooldown doubles).
func TestReplayTheLibrarysOwnRecords(t *testing.T) {
	code, out, errOut := runCmd(t, "replay", "-dependency", "crm", "../../examples/data/calls.jsonl")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"crm: 800 calls; 1 outage(s): 2026-03-02 09:07:00–09:12:00", "cooldown 30s ×2 per failed probe up to 5m"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// No silent success: a dependency the records do not have, records with no call in
// them, a malformed line, and a dependency file with problems each exit 1 with a
// message in the user's terms (it used to print "nope: 0 calls" and exit 0).
func TestReplayRefusesWhatItCannotReplay(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown dependency", []string{"-dependency", "nope", "../../examples/data/calls.csv"},
			`agentbreaker replay: ../../examples/data/calls.csv: no records of dependency "nope"; the records have crm, invoices`},
		{"header only", []string{writeFile(t, "empty.csv", "timestamp,dependency,outcome,latency_ms\n")},
			"no call records (want agentbreaker's slog JSON records of calls, or a CSV of timestamp,dependency,outcome,latency_ms)"},
		{"no call in the log", []string{writeFile(t, "log.jsonl", `{"time":"2026-03-01T09:00:00Z","level":"INFO","msg":"server started"}`+"\n")},
			"no call records"},
		{"bad line", []string{writeFile(t, "bad.csv", "2026-03-01T09:00:00Z,crm,ok,5\n2026-03-01T09:00:01Z,crm,ok,fast\n")},
			`bad.csv:2: latency_ms "fast": want a non-negative number`},
		{"bad json line", []string{writeFile(t, "bad.jsonl", "{\"time\":1}\n{oops\n")}, "bad.jsonl:2:2: not a JSON object"},
		{"deps file problems", []string{"-deps", "../../examples/data/deps-with-mistakes.yaml", "../../examples/data/calls.csv"},
			"agentbreaker replay: ../../examples/data/deps-with-mistakes.yaml:10:7: error: dependencies.crm.policy.window = \"soon\""},
		{"bad policy flag", []string{"-failure-rate-threshold", "3", "../../examples/data/calls.csv"},
			"agentbreaker replay: -failure-rate-threshold = 3: must be in (0, 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, append([]string{"replay"}, tt.args...)...)
			if code != 1 || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, tt.want)
			}
			requireNoInternalNames(t, errOut)
		})
	}
}
