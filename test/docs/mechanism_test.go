package docs

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"testing"
)

// TestRenderReportsAndRewritesDrift: a block, a figure and the exit code that differ
// from what the command prints are each reported with the page's line; render returns
// the page as the commands print it, which is what -update writes.
func TestRenderReportsAndRewritesDrift(t *testing.T) {
	r := newRunner(t)
	cmd := "agentbreaker simulate -quiet -duration 4m -outage-start 1m -outage-end 3m -strategies agentbreaker-policy"
	page := strings.Join([]string{
		"# A page",
		"<!-- run: " + cmd + " | head 1 -->",
		"```text",
		"$ " + cmd,
		"a stale line",
		"```",
		"It sent <!-- fig: sim.policy.calls_in_outage -->0<!-- /fig --> calls.",
		"<!-- run, exit 1: " + cmd + " | head 1 -->",
		"```text",
		"```",
		"",
	}, "\n")
	var failures []string
	fail := func(f string, a ...any) { failures = append(failures, fmt.Sprintf(f, a...)) }
	got, err := render(r, "page.md", page, false, fail)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"page.md:2: the block under", "page.md:7: figure sim.policy.calls_in_outage reads \"0\"",
		"page.md:8: " + cmd + " | head 1 exited 0, the marker says 1"} {
		if !slices.ContainsFunc(failures, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no failure %q in %q", want, failures)
		}
	}
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[4], "Scenario: enrichment down from 14:01:00 to 14:03:00 UTC") || lines[5] != "```" {
		t.Errorf("the block was not rewritten from the output:\n%s", got)
	}
	if strings.Contains(got, "-->0<!--") {
		t.Errorf("the figure was not rewritten:\n%s", got)
	}
	// What render returns is stable: rendering it again reports only the exit code.
	failures = nil
	again, err := render(r, "page.md", got, false, fail)
	if err != nil || again != got || len(failures) != 1 {
		t.Errorf("second render: err %v, %d failures %q, same page %v", err, len(failures), failures, again == got)
	}
}

func TestUnknownFigureAndProgramAreErrors(t *testing.T) {
	r := newRunner(t)
	if _, err := render(r, "p.md", "x <!-- fig: no.such -->1<!-- /fig -->\n", false, t.Errorf); err == nil || !strings.Contains(err.Error(), `no figure "no.such"`) {
		t.Errorf("unknown figure: %v", err)
	}
	if _, err := render(r, "p.md", "<!-- run: rm -rf / -->\n```text\n```\n", false, t.Errorf); err == nil || !strings.Contains(err.Error(), "a marked command starts with agentbreaker") {
		t.Errorf("unknown program: %v", err)
	}
	if _, err := render(r, "p.md", "<!-- run: agentbreaker simulate -->\nno block\n", false, t.Errorf); err == nil || !strings.Contains(err.Error(), "p.md:1: a run marker must be followed") {
		t.Errorf("marker without a block: %v", err)
	}
	if _, err := render(r, "p.md", "<!-- run: go -C ../elsewhere run ./cmd/x -->\n```text\n```\n", false, t.Errorf); err == nil || !strings.Contains(err.Error(), "go -C takes a directory inside the repository") {
		t.Errorf("go -C outside the repository: %v", err)
	}
	// A transcript with no marker would drift unnoticed; one in an indented example is
	// not a block.
	if _, err := render(r, "p.md", "text\n```console\n$ agentbreaker lint x.yaml\nok\n```\n", false, t.Errorf); err == nil || !strings.Contains(err.Error(), "p.md:3: the block shows `$ agentbreaker lint x.yaml` with no run marker") {
		t.Errorf("unmarked transcript: %v", err)
	}
	if _, err := render(r, "p.md", "    ```console\n    $ agentbreaker lint x.yaml\n    ```\n", false, t.Errorf); err != nil {
		t.Errorf("indented example: %v", err)
	}
}

// TestFailureShowsItsExitStatus: a command that exits non-zero, as its marker says,
// ends its block with "[exit status N]", so a reader sees what the test checks.
func TestFailureShowsItsExitStatus(t *testing.T) {
	r := newRunner(t)
	cmd := "agentbreaker replay -dependency billing examples/data/calls.jsonl"
	page := "<!-- run, exit 1: " + cmd + " -->\n```console\n```\n"
	got, err := render(r, "p.md", page, true, t.Errorf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 7 || lines[2] != "$ "+cmd || !strings.Contains(lines[3], `no records of dependency "billing"`) || lines[4] != "[exit status 1]" {
		t.Errorf("the block is not the command, its error and its exit status:\n%s", got)
	}
}

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`agentbreaker simulate -out "$TMP" -png '$OUT' -x "a b"`, map[string]string{"TMP": "/t", "OUT": "/o"})
	want := []string{"agentbreaker", "simulate", "-out", "/t", "-png", "$OUT", "-x", "a b"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("splitWords = %q, %v; want %q", got, err, want)
	}
	if _, err := splitWords(`a "b`, nil); err == nil {
		t.Error("an unclosed quote is accepted")
	}
	if _, err := splitWords(`a $HOME`, nil); err == nil {
		t.Error("an unknown variable is accepted")
	}
}

func TestFilters(t *testing.T) {
	out := "1\n2\n3\n4\n5\n6\n"
	for _, tt := range []struct{ f, want string }{
		{"head 2", "1\n2\n"},
		{"tail 2", "5\n6\n"},
		{"grep 4", "4\n"},
		{"lines 1-2,4", "1\n2\n  ...\n4\n  ...\n"},
		{"lines 2-3,5-6", "  ...\n2\n3\n  ...\n5\n6\n"},
	} {
		if got, err := filter(out, tt.f); err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.f, got, err, tt.want)
		}
	}
	for _, bad := range []string{"lines 3-2", "lines 5,2", "lines 1-9", "sort", "head x"} {
		if _, err := filter(out, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestSameImage: a PNG equals itself and a copy with one pixel a shade off, and not one
// with a block of pixels changed.
func TestSameImage(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	enc := func(m image.Image) []byte {
		var b bytes.Buffer
		if err := png.Encode(&b, m); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	base := enc(img)
	shade := image.NewRGBA(img.Rect)
	copy(shade.Pix, img.Pix)
	shade.Set(3, 3, color.RGBA{200, 200, 200, 255})
	moved := image.NewRGBA(img.Rect)
	copy(moved.Pix, img.Pix)
	for x := range 40 {
		moved.Set(x, 50, color.RGBA{0, 0, 0, 255})
	}
	if !sameImage(base, enc(shade)) {
		t.Error("one pixel off counts as another image")
	}
	if sameImage(base, enc(moved)) {
		t.Error("a drawn line counts as the same image")
	}
}

// TestAdaptiveCostGoalIsComputed: the verdict the adaptive limit's page shows
// (bench.adaptive.goal) is computed from benchtable's table against the goal, and says
// which part a recording misses.
func TestAdaptiveCostGoalIsComputed(t *testing.T) {
	table := func(work, breaker, limit, peer string) []byte {
		return []byte(strings.Join([]string{
			"goos: linux, goarch: amd64, cpu: Some CPU",
			"benchmark                                         runs    ns/op  allocs/op  work-ratio",
			"AdaptiveLimit/agentbreaker-breaker                   6  " + breaker + "          0           –",
			"AdaptiveLimit/agentbreaker-breaker+limit             6  " + limit + "          0           –",
			"AdaptiveLimit/failsafe-adaptivelimiter               6  " + peer + "          1           –",
			"AdaptiveLimitParallel/agentbreaker-breaker+limit     6  22.5          0           –",
			"CallbacksPerCallAdaptivePaired                       6  185,000   1,860        " + work,
			"",
		}, "\n"))
	}
	tests := []struct {
		name                       string
		work, breaker, limit, peer string
		want                       string
	}{
		{"the recording's figures", "1.06", "12.5", "43.2", "329", "met"},
		{"the plugin's work over 1.1", "1.12", "12.5", "43.2", "329", "not met (plugin work 1.12× > 1.1×)"},
		{"over 4× the breaker", "1.06", "10.0", "43.2", "329", "not met (primitives 4.32× the breaker > 4×)"},
		{"over a fifth of failsafe-go's", "1.06", "12.5", "43.2", "200", "not met (primitives 1/4.6 of failsafe-go's > 1/5)"},
	}
	for _, tt := range tests {
		got, err := adaptiveCostGoal(table(tt.work, tt.breaker, tt.limit, tt.peer))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if _, err := adaptiveCostGoal([]byte("goos: linux\n")); err == nil {
		t.Error("a table without the rows gives no verdict")
	}
}
