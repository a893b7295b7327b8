package main

import (
	"os"
	"strings"
	"testing"
)

// docBlock returns the ```text block that follows marker in a docs page.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("%s: no %q", path, marker)
	}
	rest := text[i+len(marker):]
	start := strings.Index(rest, "```text\n")
	if start < 0 {
		t.Fatalf("%s: no ```text block after %q", path, marker)
	}
	rest = rest[start+len("```text\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("%s: unterminated block", path)
	}
	return rest[:end]
}

// Issue 25 (f): the partial-outage tables in docs/partial-outages.md are what the
// command prints.
func TestSimulatePartialMatchesTheDoc(t *testing.T) {
	code, out, errOut := runCmd(t, "simulate", "-partial", "0.3,0.6,0.9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := docBlock(t, "../../docs/partial-outages.md", "<!-- run: agentbreaker simulate -partial 0.3,0.6,0.9 -->")
	if out != want {
		t.Fatalf("docs/partial-outages.md is out of date; the command prints:\n%s", out)
	}
}

func TestSimulatePartialFlags(t *testing.T) {
	_, a, _ := runCmd(t, "simulate", "-partial", "0.6")
	_, b, _ := runCmd(t, "simulate", "-partial", "0.6", "-seed", "2")
	if a == b {
		t.Fatal("-seed did not change the partial outage")
	}
	for _, bad := range []string{"x", "0", "1.5", "0.5,,0.6"} {
		code, _, errOut := runCmd(t, "simulate", "-partial", bad)
		if code == 0 || !strings.Contains(errOut, "-partial") {
			t.Fatalf("-partial %s: exit %d, %q", bad, code, errOut)
		}
	}
}
