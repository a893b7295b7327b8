package readme_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// maxReadmeLines is the README's budget (issue 27): a newcomer reads it in five
// minutes; every topic has its own page under docs/.
const maxReadmeLines = 300

func TestReadmeFitsItsBudget(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	n := strings.Count(string(b), "\n")
	require.LessOrEqual(t, n, maxReadmeLines, "README.md has %d lines: move detail to a page under docs/", n)
}

// quickStartFile is the Quick start as a program of its own, built by CI with the
// other examples.
const quickStartFile = "examples/quickstart/main.go"

// TestQuickStartIsTheWholeProgram holds the README's Quick start to the file it shows:
// the README's first Go block is examples/quickstart/main.go, line for line
// (indentation aside), so what a newcomer copies compiles.
func TestQuickStartIsTheWholeProgram(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	src, err := os.ReadFile(filepath.Join(repoRoot, quickStartFile))
	require.NoError(t, err)
	require.Equal(t, significantLines(string(src)), significantLines(blocks[0][1]),
		"the README's first Go block must be %s exactly", quickStartFile)
	require.True(t, strings.HasPrefix(strings.TrimSpace(blocks[0][1]), "// Command quickstart"), "it is a whole program")
}

// TestQuickStartRunsAgainstAFailingAPI builds the Quick start and runs it as a user
// would, with the real genai client pointed at a local Gemini endpoint
// (GOOGLE_GEMINI_BASE_URL) and the weather API failing with 503: the model asks for
// the tool, the API is called once, and the model's next request carries
// agentbreaker's answer instead of an error that ends the turn.
func TestQuickStartRunsAgainstAFailingAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, "./examples/quickstart")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var weatherCalls atomic.Int64
	weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		weatherCalls.Add(1)
		http.Error(w, "upstream overloaded: zq9-body", http.StatusServiceUnavailable)
	}))
	t.Cleanup(weather.Close)
	model := geminifake.Start(t, geminifake.Config{})
	require.NoError(t, model.Enqueue(
		geminifake.Reply{Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_weather", map[string]any{"city": "Paris"})}},
		geminifake.Reply{Text: "The weather service is not answering right now."},
	))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "What is the weather in Paris?")
	run.Env = append(os.Environ(), "GOOGLE_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+model.URL(), "WEATHER_API_URL="+weather.URL)
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "The weather service is not answering right now.")
	require.EqualValues(t, 1, weatherCalls.Load())

	log := model.Log()
	require.Len(t, log, 2, "one request for the tool call, one with its result")
	require.Contains(t, string(log[1].Body), "agentbreaker.failed", "the model reads agentbreaker's answer")
	require.NotContains(t, string(log[1].Body), "zq9-body", "and none of the failing API's text")
}

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestEveryLinkResolves follows every relative link of the README and the docs pages:
// the file exists, and an anchor names a heading of it.
func TestEveryLinkResolves(t *testing.T) {
	t.Parallel()
	pages := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "README.md")}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	pages = append(pages, docs...)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: %s does not exist", rel(page), target, rel(file))
					continue
				}
			}
			if anchor != "" && !hasAnchor(t, file, anchor) {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", rel(page), target, rel(file), anchor)
			}
		}
	}
	require.Greater(t, checked, 10, "the link pattern is broken")
}

func rel(p string) string {
	r, err := filepath.Rel(repoRoot, p)
	if err != nil {
		return p
	}
	return r
}

// fence matches a fenced block; inlineCode an inline code span.
var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
)

func withoutCode(s string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(s, ""), "")
}

// hasAnchor reports whether the Markdown file has a heading whose GitHub anchor is
// anchor, or an explicit <a id> or <a name> of it.
func hasAnchor(t *testing.T, file, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	if strings.Contains(string(b), `id="`+anchor+`"`) || strings.Contains(string(b), `name="`+anchor+`"`) {
		return true
	}
	for _, line := range strings.Split(fence.ReplaceAllString(string(b), ""), "\n") {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") && slug(h) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as
// hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// jsonBlock matches a fenced JSON block.
var jsonBlock = regexp.MustCompile("(?ms)^```json\n(.*?)^```")

// TestReadmePayloadIsWhatTheModelGets keeps the README's sample answer equal to the
// payload agentbreaker builds for it: an open breaker on weather-api that has been
// returning 5xx, 30 s before a probe may go.
func TestReadmePayloadIsWhatTheModelGets(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	blocks := jsonBlock.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(blocks[0][1]), &shown))
	built, err := json.Marshal(payloads.Unavailable(payloads.Info{
		Dependency: "weather-api", Tool: "get_weather", Class: classify.ClassHTTP5xx, RetryAfter: 30 * time.Second,
	}))
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, json.Unmarshal(built, &want))
	require.Equal(t, want, shown)
}
