package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// TestTuneWritesAFileLintPasses tunes generated traffic and checks what tune writes:
// lint passes the dependency file (strictly: no warning either), depfile loads it, a
// map builds from it, and the plot is a PNG.
func TestTuneWritesAFileLintPasses(t *testing.T) {
	dir := t.TempDir()
	records, deps, plot, timeouts := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "deps.yaml"), filepath.Join(dir, "t.png"), filepath.Join(dir, "timeouts.yaml")
	if code, _, errOut := runCmd(t, "generate", "-days", "6", "-outages", "3", "-rate", "0.15", "-seed", "5", "-o", records); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCmd(t, "tune", "-o", deps, "-png", plot, "-timeouts", timeouts, records)
	if code != 0 {
		t.Fatalf("tune: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"crm: ", "recommended (chosen by", "all folds", "tool timeout", "wrote " + deps + ": lint finds nothing"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut := runCmd(t, "lint", "-strict", "-timeouts", timeouts, deps); code != 0 || !strings.HasSuffix(out, ": ok\n") {
		t.Errorf("lint: exit %d: %s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(timeouts); err != nil || !strings.Contains(string(b), "  lookup_customer: {timeout: ") {
		t.Errorf("timeouts file: %v\n%s", err, b)
	}
	cfg, err := depfile.Load(deps)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dependencymap.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if dep, ok := m.DependencyOf("lookup_customer"); !ok || dep != "crm" {
		t.Errorf("lookup_customer's dependency %q, %v", dep, ok)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("plot: %v", err)
	}
}

func TestTuneRefusesTooLittleEvidence(t *testing.T) {
	if code, out, _ := runCmd(t, "tune", "-json", "../../examples/data/calls.jsonl"); code != 1 || !strings.HasSuffix(out, "}\n") {
		t.Errorf("-json: exit %d, output not JSON alone:\n%s", code, out)
	}
	code, out, _ := runCmd(t, "tune", "-o", filepath.Join(t.TempDir(), "deps.yaml"), "../../examples/data/calls.jsonl")
	if code != 1 || !strings.Contains(out, "crm: 800 calls, 1 outage(s)\n  no recommendation: 1 outage(s) in the records; tune needs at least 2") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestTuneAndGenerateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no records", []string{"tune"}, "want one records file"},
		{"stdin", []string{"tune", "-"}, "not standard input"},
		{"top", []string{"tune", "-top", "-1", "x.jsonl"}, "-top -1: want 0 or more"},
		{"workers", []string{"tune", "-workers", "-2", "x.jsonl"}, "-workers -2"},
		{"bad flag", []string{"tune", "-sweep", "x.jsonl"}, "-sweep"},
		{"month", []string{"tune", "-month", "soon"}, `-month "soon": want a seed`},
		{"month and file", []string{"tune", "-month", "1", "x.jsonl"}, "want no records file"},
		{"days", []string{"generate", "-days", "0"}, "-days 0: want 1 to 366"},
		{"rate", []string{"generate", "-rate", "-1"}, "-rate -1"},
		{"outages", []string{"generate", "-days", "3", "-outages", "4"}, "-outages 4"},
		{"argument", []string{"generate", "x"}, "want no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}
