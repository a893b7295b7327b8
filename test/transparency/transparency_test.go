// Package transparency_test checks that a healthy run is the same with and without
// agentbreaker, except for what the docs say (docs/agents.md, "A healthy run"): the
// same scripted agents run through adk-go's runner twice, once alone and once wired
// as the docs show for each hop, and every event the user gets, every request each
// model gets, the session's events and state, and the requests reaching each
// dependency are compared, IDs and times normalised.
package transparency_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestHealthyRunIsTheSame is issue 47's check, on every hop docs/agents.md lists. It
// found the operation scope a2aguard sent in the event ending each A2A run by transfer
// (customMetadata "a2a:request"), which the session stored: the shapes "A2A by
// transfer" fail on a2aguard before that fix.
func TestHealthyRunIsTheSame(t *testing.T) {
	for _, s := range shapes() {
		t.Run(s.name, func(t *testing.T) {
			plainRec, guardedRec := run(t, s, false), run(t, s, true)
			if testing.Verbose() {
				t.Logf("dependencies %v; events per turn %v", guardedRec["5 dependencies"], eventsPerTurn(guardedRec))
			}
			plain := cleanedAnswer(newNormalizer().value(plainRec))
			guarded := newNormalizer().value(guardedRec)
			allowed, sentenced := allowDocumented(guarded)
			t.Logf("the docstring sentence was on %v", slices.Sorted(maps.Keys(sentenced)))
			compare(t, plain, allowed)
		})
	}
}

// compare reports every section of the record that differs, element by element for
// lists, so a failure names the event or request.
func compare(t *testing.T, want, got any) {
	t.Helper()
	wm, _ := want.(map[string]any)
	gm, _ := got.(map[string]any)
	for k, wv := range wm {
		comparePath(t, k, wv, gm[k])
	}
	for k := range gm {
		if _, ok := wm[k]; !ok {
			t.Errorf("%s: only with agentbreaker", k)
		}
	}
}

func comparePath(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		if len(w) != len(g) {
			t.Errorf("%s: %d elements without agentbreaker, %d with", path, len(w), len(g))
		}
		for i := range min(len(w), len(g)) {
			comparePath(t, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
		return
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		// Sections and the maps in them: descend; an element of a list (an event, a
		// model request) compares whole.
		if !strings.Contains(path, "[") {
			for k, wv := range w {
				comparePath(t, path+"."+k, wv, g[k])
			}
			for k := range g {
				if _, ok := w[k]; !ok {
					t.Errorf("%s.%s: only with agentbreaker", path, k)
				}
			}
			return
		}
	}
	if w, g := pretty(want), pretty(got); w != g {
		t.Errorf("%s differs (- without agentbreaker, + with):\n%s", path, lineDiff(w, g))
	}
}

// lineDiff shows the lines between the first and the last that differ, with two lines
// of context.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	var out strings.Builder
	for i := max(pre-2, 0); i < pre; i++ {
		out.WriteString("  " + al[i] + "\n")
	}
	for _, l := range al[pre : len(al)-suf] {
		out.WriteString("- " + l + "\n")
	}
	for _, l := range bl[pre : len(bl)-suf] {
		out.WriteString("+ " + l + "\n")
	}
	for i := len(al) - suf; i < min(len(al)-suf+2, len(al)); i++ {
		out.WriteString("  " + al[i] + "\n")
	}
	return out.String()
}
