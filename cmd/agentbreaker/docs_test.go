package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the outputs shown in docs/cli.md from the commands' real output")

const cliDoc = "docs/cli.md" // from the repository's root, where its command lines run

// docCommand is one "$ agentbreaker ..." line of a console block and the output the
// page shows under it; a last line "[exit status N]" gives a failure's status.
type docCommand struct {
	line       string // the command line, "agentbreaker" included
	start, end int    // its output's lines in the page: [start, end)
}

// parseDoc finds the command lines of the page's console blocks.
func parseDoc(lines []string) []docCommand {
	var out []docCommand
	inConsole := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "```console"):
			inConsole = true
		case strings.HasPrefix(l, "```") && inConsole:
			inConsole = false
			if n := len(out); n > 0 && out[n-1].end == 0 {
				out[n-1].end = i
			}
		case inConsole && strings.HasPrefix(l, "$ "):
			if n := len(out); n > 0 && out[n-1].end == 0 {
				out[n-1].end = i
			}
			out = append(out, docCommand{line: strings.TrimPrefix(l, "$ "), start: i + 1})
		}
	}
	return out
}

// TestCLIDocRunsAsWritten runs every command line of docs/cli.md from the repository's
// root, as a reader would, and compares what it prints (standard output, then standard
// error) and its exit status with what the page shows. -update-docs rewrites the page's
// outputs. The commands must leave the work tree as they found it.
func TestCLIDocRunsAsWritten(t *testing.T) {
	t.Chdir("../..")
	raw, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	cmds := parseDoc(lines)
	if len(cmds) < 5 {
		t.Fatalf("%s has %d command lines; the parser or the page is wrong", cliDoc, len(cmds))
	}
	before := gitStatus(t)
	var rewritten []string
	last := 0
	for _, c := range cmds {
		args := strings.Fields(c.line)
		if args[0] != "agentbreaker" || strings.ContainsAny(c.line, "\"'$|&;<>`") {
			t.Errorf("%q: a command line must be agentbreaker and plain arguments (no shell)", c.line)
			continue
		}
		code, stdout, stderr := runCmd(t, args[1:]...)
		got := stdout + stderr
		if code != 0 {
			got += fmt.Sprintf("[exit status %d]\n", code)
		}
		want := strings.Join(lines[c.start:c.end], "\n")
		if want != "" {
			want += "\n"
		}
		if *updateDocs {
			rewritten = append(append(rewritten, lines[last:c.start]...), strings.Split(strings.TrimSuffix(got, "\n"), "\n")...)
			last = c.end
			continue
		}
		if got != want {
			t.Errorf("$ %s\nprinted:\n%s\nthe page shows:\n%s(rerun with -update-docs if the new output is right)", c.line, got, want)
		}
	}
	if *updateDocs {
		rewritten = append(rewritten, lines[last:]...)
		if err := os.WriteFile(cliDoc, []byte(strings.Join(rewritten, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if after := gitStatus(t); !bytes.Equal(before, after) {
		t.Errorf("the commands changed the work tree:\n%s", after)
	}
}

// gitStatus returns git's short status of the tree, or skips the check outside a
// clone (a module cache has no .git).
func gitStatus(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		t.Logf("no git status (%v): not checking that the commands leave the tree clean", err)
		return nil
	}
	return out
}
