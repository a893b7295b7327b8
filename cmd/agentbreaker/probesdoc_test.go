package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestProbesDocFigures runs every `<!-- run: agentbreaker ... -->` command of
// docs/probes.md and compares its output with the text block that follows it, so the
// page's figures are the simulator's.
func TestProbesDocFigures(t *testing.T) {
	doc, err := os.ReadFile("../../docs/probes.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- run: agentbreaker (.*?) -->\n```text\n(.*?)\n```")
	blocks := re.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 2 {
		t.Fatalf("%d run blocks in docs/probes.md, want 2", len(blocks))
	}
	for _, b := range blocks {
		code, out, errOut := runCmd(t, strings.Fields(b[1])...)
		if code != 0 {
			t.Fatalf("agentbreaker %s: exit %d: %s", b[1], code, errOut)
		}
		if got := strings.TrimRight(out, "\n"); got != b[2] {
			t.Errorf("agentbreaker %s: the output differs from docs/probes.md:\n%s", b[1], got)
		}
	}
}
