package readme_test

import (
	"go/format"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGoBlocksAreGofmtFormatted fails on a Go block of README.md or docs/*.md that gofmt
// would change: a reader copies the block, and it should read as the code it came from
// (issue 48 found a page whose block had lost its indentation). Most blocks are
// fragments, statements or a composite literal without their function; go/format
// formats those as gofmt does, indented as their first line, so each block is given to
// it as it stands.
func TestGoBlocksAreGofmtFormatted(t *testing.T) {
	t.Parallel()
	pages := []string{filepath.Join(repoRoot, "README.md")}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, page := range append(pages, docs...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range goBlock.FindAllStringSubmatch(string(text), -1) {
			total++
			if msg := gofmtDiff(b[1]); msg != "" {
				t.Errorf("%s: Go block %d (starting %q) is not gofmt-formatted: %s", filepath.Base(page), i+1, firstLine(significantLines(b[1])), msg)
			}
		}
	}
	if total == 0 {
		t.Fatal("README.md and docs/ have no Go blocks: the pattern is broken")
	}
}

// gofmtDiff returns "" when src is formatted, otherwise the first line gofmt changes, or
// why src cannot be formatted at all.
func gofmtDiff(src string) string {
	out, err := format.Source([]byte(src))
	if err != nil {
		return "it does not parse: " + err.Error()
	}
	if string(out) == src {
		return ""
	}
	have, want := strings.Split(src, "\n"), strings.Split(string(out), "\n")
	for i := range min(len(have), len(want)) {
		if have[i] != want[i] {
			return "line " + strconv.Itoa(i+1) + " is " + strconv.Quote(have[i]) + ", gofmt writes " + strconv.Quote(want[i])
		}
	}
	return "gofmt changes its line count"
}
