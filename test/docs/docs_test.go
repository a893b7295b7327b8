package docs

import (
	"bytes"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the marked blocks, figures and files of the pages from the commands' output")

// pages are the Markdown files whose marked figures are checked.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

func newRunner(t *testing.T) *runner {
	return &runner{bin: t.TempDir(), outDir: t.TempDir(), built: map[string]string{}, outs: map[string]result{}}
}

// TestPagesShowWhatTheCommandsPrint runs every command a page marks and compares its
// output with the page: each run block, each inline figure, each generated file. With
// -update it writes the commands' output into the pages instead. The commands must
// leave the work tree as they found it.
func TestPagesShowWhatTheCommandsPrint(t *testing.T) {
	r := newRunner(t)
	before := gitStatus(t)
	defer func() {
		if after := gitStatus(t); !*update && !bytes.Equal(before, after) {
			t.Errorf("the commands changed the work tree; git status before:\n%s\nafter:\n%s", before, after)
		}
	}()
	for _, path := range pages(t) {
		name, _ := filepath.Rel(repoRoot, path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := render(r, name, string(data), *update, t.Errorf)
			if err != nil {
				t.Fatal(err)
			}
			if got == string(data) {
				return
			}
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", name)
			}
		})
	}
}

// gitStatus returns git's short status of the repository, or nil outside a clone (a
// module cache has no .git), where the tree is not checked.
func gitStatus(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		t.Logf("no git status (%v): not checking that the commands leave the tree as they found it", err)
		return nil
	}
	return out
}

// render returns the page with every marked block and figure as the commands print it,
// and reports each difference through fail (unless updating), with the page's line.
func render(r *runner, name, page string, update bool, fail func(string, ...any)) (string, error) {
	lines := strings.Split(page, "\n")
	blocks, files, err := scan(name, lines)
	if err != nil {
		return "", err
	}
	// Blocks from the last, so that earlier line numbers stay valid while rewriting.
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		res, err := r.run(b.cmd)
		if err != nil {
			return "", fmt.Errorf("%s:%d: %w", name, b.line+1, err)
		}
		if res.exit != b.exit {
			fail("%s:%d: %s exited %d, the marker says %d:\n%s", name, b.line+1, b.cmd, res.exit, b.exit, res.out)
			continue
		}
		shown, _, _ := strings.Cut(b.cmd, " | ")
		want := strings.Split(strings.TrimSuffix(string(res.out), "\n"), "\n")
		if !b.table {
			want = append([]string{"$ " + shown}, want...)
		}
		if res.exit != 0 {
			want = append(want, fmt.Sprintf("[exit status %d]", res.exit))
		}
		for j := range want {
			want[j] = strings.TrimRight(want[j], " ")
		}
		if have := lines[b.open+1 : b.shut]; !slices.Equal(have, want) && !update {
			fail("%s:%d: the block under `%s` is not what it prints (go test ./docs -update rewrites it):\n%s",
				name, b.line+1, b.cmd, diff(have, want))
		}
		lines = slices.Concat(lines[:b.open+1], want, lines[b.shut:])
	}
	for _, f := range files {
		res, err := r.run(f.cmd)
		if err != nil {
			return "", fmt.Errorf("%s:%d: %w", name, f.line+1, err)
		}
		if res.exit != 0 || res.file == nil {
			fail("%s:%d: %s exited %d and wrote nothing to $OUT:\n%s", name, f.line+1, f.cmd, res.exit, res.out)
			continue
		}
		target := filepath.Join(repoRoot, f.path)
		have, _ := os.ReadFile(target)
		if bytes.Equal(have, res.file) || sameImage(have, res.file) {
			continue
		}
		if update {
			if err := os.WriteFile(target, res.file, 0o644); err != nil {
				return "", err
			}
			continue
		}
		fail("%s:%d: %s is not what `%s` writes (%d bytes, it writes %d; go test ./docs -update rewrites it)",
			name, f.line+1, f.path, f.cmd, len(have), len(res.file))
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
			continue // an indented code block: examples of markers, not markers
		}
		var ferr error
		lines[i] = figMarker.ReplaceAllStringFunc(l, func(m string) string {
			sub := figMarker.FindStringSubmatch(m)
			fig, ok := figures[sub[1]]
			if !ok {
				ferr = fmt.Errorf("%s:%d: no figure %q in test/docs/figures.go", name, i+1, sub[1])
				return m
			}
			res, err := r.run(fig.cmd)
			if err != nil {
				ferr = err
				return m
			}
			v, err := fig.value(res.out)
			if err != nil {
				ferr = fmt.Errorf("%s:%d: figure %s: %w", name, i+1, sub[1], err)
				return m
			}
			if v != sub[2] && !update {
				fail("%s:%d: figure %s reads %q; `%s` gives %q", name, i+1, sub[1], sub[2], fig.cmd, v)
			}
			return "<!-- fig: " + sub[1] + " -->" + v + "<!-- /fig -->"
		})
		if ferr != nil {
			return "", ferr
		}
	}
	return strings.Join(lines, "\n"), nil
}

// sameImage reports whether two PNGs show the same picture, allowing the last bits of
// anti-aliasing to differ: rasterising is floating-point work, and a machine that fuses
// multiply-adds (arm64) draws a few edge pixels a shade apart. A moved line, a changed
// label or another size is a difference.
func sameImage(a, b []byte) bool {
	ia, errA := png.Decode(bytes.NewReader(a))
	ib, errB := png.Decode(bytes.NewReader(b))
	if errA != nil || errB != nil || ia.Bounds() != ib.Bounds() {
		return false
	}
	bad, total := 0, 0
	for y := ia.Bounds().Min.Y; y < ia.Bounds().Max.Y; y++ {
		for x := ia.Bounds().Min.X; x < ia.Bounds().Max.X; x++ {
			total++
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			if far(r1, r2) || far(g1, g2) || far(b1, b2) {
				bad++
			}
		}
	}
	return bad*10000 <= total // at most 0.01% of the pixels
}

func far(a, b uint32) bool { return max(a, b)-min(a, b) > 24<<8 }

// diff shows the first lines that differ.
func diff(have, want []string) string {
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(have), len(want)) && shown < 8; i++ {
		var h, w string
		if i < len(have) {
			h = have[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if h != w {
			fmt.Fprintf(&b, "  line %d\n    page: %s\n    gets: %s\n", i+1, h, w)
			shown++
		}
	}
	return b.String()
}
