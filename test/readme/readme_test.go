package readme_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository, two levels up from this package (test/readme).
const repoRoot = "../.."

// goBlock matches a fenced Go block in Markdown.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestReadmeGoBlocksAreCompiled keeps the README from going stale: every Go block in
// it must appear, line for line (indentation aside), in the body of a function in a
// test file of the repository (readme_example_test.go holds most of them), where the
// compiler checks it on every test run. It lives in the test module because the
// README's examples import everything, and a test of a package users import would put
// all of that into their go.sum.
func TestReadmeGoBlocksAreCompiled(t *testing.T) {
	pages := []string{filepath.Join(repoRoot, "README.md")}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, docs...)
	examples := exampleBodies(t)
	total := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range goBlock.FindAllStringSubmatch(string(text), -1) {
			total++
			want := significantLines(b[1])
			if wholeFile(want) {
				if !isRepoFile(t, want) {
					t.Errorf("%s: Go block %d (a whole file, starting %q) is no file of the repository", filepath.Base(page), i+1, firstLine(want))
				}
				continue
			}
			found := false
			for _, body := range examples {
				if containsRun(body.lines, want) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: Go block %d (starting %q) is in no function of a test file; copy it from one, or add it to readme_example_test.go", filepath.Base(page), i+1, firstLine(want))
			}
		}
	}
	if total == 0 {
		t.Fatal("README.md and docs/ have no Go blocks: the pattern is broken")
	}
}

// wholeFile reports whether a block is a Go file rather than a snippet: it has a
// package clause.
func wholeFile(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "package ") {
			return true
		}
	}
	return false
}

// isRepoFile reports whether lines are, significant line for significant line, a Go
// file of the repository.
func isRepoFile(t *testing.T, lines []string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = slices.Equal(significantLines(string(src)), lines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

type exampleBody struct {
	name  string
	lines []string
}

// exampleBodies returns the bodies of every function in the repository's test files
// (every module in it), as significant lines.
func exampleBodies(t *testing.T) []exampleBody {
	t.Helper()
	var out []exampleBody
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			body := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
			out = append(out, exampleBody{name: path + ":" + fn.Name.Name, lines: significantLines(string(body))})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("found no functions in test files")
	}
	return out
}

// significantLines trims each line and drops blank ones, so that indentation and
// spacing do not matter but every token does.
func significantLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func containsRun(hay, needle []string) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		match := true
		for j := range needle {
			if hay[i+j] != needle[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}
