package readme_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"math"
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

	"github.com/agentbreaker/agentbreaker/breaker"
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

// maxStatusCell is the longest Status cell of the README's feature table (issue 43):
// the front door says "done" and links the page where the figures and their limits
// live; a limit a user must know before choosing gets one short clause.
const maxStatusCell = 120

// TestFeatureTableStatusCellsAreShort holds every Status cell of the README's feature
// table, as written (figure markers included), to maxStatusCell characters. Five cells
// were paragraphs of up to 778.
func TestFeatureTableStatusCellsAreShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(b), "\n## Features\n")
	require.True(t, ok, "the README has a Features section")
	table, _, _ = strings.Cut(table, "\n## ")
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| ") || len(cells) != 5 || strings.TrimSpace(cells[3]) == "Status" {
			continue
		}
		rows++
		status := strings.TrimSpace(cells[3])
		require.LessOrEqual(t, len([]rune(status)), maxStatusCell,
			"the Status cell of %q is %d characters: say done, and move the figures and their limits to the page it links",
			strings.TrimSpace(cells[1])[:min(40, len(strings.TrimSpace(cells[1])))], len([]rune(status)))
	}
	require.Greater(t, rows, 10, "the feature table's rows were found")
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

// buildQuickStart builds the Quick start as a user does (go build ./examples/quickstart).
func buildQuickStart(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, "./examples/quickstart")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// quickStartEnv is the environment without the variables the Quick start reads, plus
// vars.
func quickStartEnv(vars ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOGLE_API_KEY", "GEMINI_API_KEY", "WEATHER_API_URL", "GOOGLE_GEMINI_BASE_URL",
			"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, vars...)
}

// runQuickStart runs the built program and returns its stdout, its stderr and its exit
// code.
func runQuickStart(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, args...)
	run.Env = env
	var out, errOut strings.Builder
	run.Stdout, run.Stderr = &out, &errOut
	err := run.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// TestQuickStartSaysWhatIsMissing runs the built Quick start with what it needs left
// out, one thing or all: it says so in one line on stderr, exits 2, and nothing reached
// the model endpoint or the weather API.
func TestQuickStartSaysWhatIsMissing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	t.Parallel()
	bin := buildQuickStart(t)
	var weatherCalls atomic.Int64
	weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { weatherCalls.Add(1) }))
	t.Cleanup(weather.Close)
	model := geminifake.Start(t, geminifake.Config{})
	base, api, url := "GOOGLE_GEMINI_BASE_URL="+model.URL(), "GOOGLE_API_KEY=test-key", "WEATHER_API_URL="+weather.URL
	question := []string{"What is the weather in Paris?"}
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{name: "no API key", env: []string{base, url}, args: question,
			want: "quickstart: missing an API key in GOOGLE_API_KEY or GEMINI_API_KEY"},
		{name: "empty API key", env: []string{base, url, "GOOGLE_API_KEY=", "GEMINI_API_KEY="}, args: question,
			want: "quickstart: missing an API key in GOOGLE_API_KEY or GEMINI_API_KEY"},
		{name: "no weather API", env: []string{base, api}, args: question,
			want: "quickstart: missing the weather API's URL in WEATHER_API_URL"},
		{name: "no question", env: []string{base, api, url},
			want: `quickstart: missing a question (quickstart "What is the weather in Paris?")`},
		{name: "a question of spaces", env: []string{base, api, url}, args: []string{" ", "  "},
			want: `quickstart: missing a question (quickstart "What is the weather in Paris?")`},
		{name: "nothing", env: []string{base},
			want: "quickstart: missing an API key in GOOGLE_API_KEY or GEMINI_API_KEY; " +
				`the weather API's URL in WEATHER_API_URL; a question (quickstart "What is the weather in Paris?")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runQuickStart(t, bin, quickStartEnv(tt.env...), tt.args...)
			require.Equal(t, 2, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, tt.want+"\n", stderr, "one line saying what is missing")
		})
	}
	require.Empty(t, model.Log(), "nothing reached the model endpoint")
	require.Zero(t, weatherCalls.Load(), "nothing reached the weather API")
}

// TestQuickStartRunsAgainstAFailingAPI builds the Quick start and runs it as a user
// would, with the real genai client pointed at a local Gemini endpoint
// (GOOGLE_GEMINI_BASE_URL) and the weather API failing with 503: the model asks for
// the tool, the API is called once, and the model's next request carries
// agentbreaker's answer instead of an error that ends the turn. The key is given in
// either variable genai reads.
func TestQuickStartRunsAgainstAFailingAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	t.Parallel()
	bin := buildQuickStart(t)
	for _, key := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"} {
		t.Run(key, func(t *testing.T) {
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
			stdout, stderr, code := runQuickStart(t, bin,
				quickStartEnv(key+"=test-key-"+key, "GOOGLE_GEMINI_BASE_URL="+model.URL(), "WEATHER_API_URL="+weather.URL),
				"What is the weather in Paris?")
			require.Zero(t, code, "stderr: %s", stderr)
			require.Equal(t, "The weather service is not answering right now.\n", stdout)
			require.EqualValues(t, 1, weatherCalls.Load())

			log := model.Log()
			require.Len(t, log, 2, "one request for the tool call, one with its result")
			require.Equal(t, "test-key-"+key, log[0].Header.Get("x-goog-api-key"), "genai read the key from %s", key)
			require.Contains(t, string(log[1].Body), "agentbreaker.failed", "the model reads agentbreaker's answer")
			require.NotContains(t, string(log[1].Body), "zq9-body", "and none of the failing API's text")
			require.NotContains(t, stderr, "zq9-body", "nor does the log")
		})
	}
}

// TestQuickStartTellsAMisconfiguredURL runs the Quick start with a weather API URL
// that has no scheme: net/http refuses the request, the model reads agentbreaker's
// failed payload (request_config, not "unavailable"), and stderr carries one WARN
// record that says the program's configuration is at fault and why.
func TestQuickStartTellsAMisconfiguredURL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	t.Parallel()
	bin := buildQuickStart(t)
	model := geminifake.Start(t, geminifake.Config{})
	require.NoError(t, model.Enqueue(
		geminifake.Reply{Parts: []*genai.Part{genai.NewPartFromFunctionCall("get_weather", map[string]any{"city": "Paris"})}},
		geminifake.Reply{Text: "I cannot reach the weather service."},
	))
	_, stderr, code := runQuickStart(t, bin,
		quickStartEnv("GOOGLE_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+model.URL(), "WEATHER_API_URL=weather.example/v1/current"),
		"What is the weather in Paris?")
	require.Zero(t, code, "stderr: %s", stderr)
	log := model.Log()
	require.Len(t, log, 2)
	require.Contains(t, string(log[1].Body), "agentbreaker.failed")
	require.Contains(t, string(log[1].Body), "request_config")
	var warns []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.Contains(line, " WARN ") {
			warns = append(warns, line)
		}
	}
	t.Logf("stderr:\n%s", stderr)
	require.Len(t, warns, 1, "stderr:\n%s", stderr)
	require.Contains(t, warns[0], "because of this program's configuration")
	require.Contains(t, warns[0], "dependency=weather-api")
	require.Contains(t, warns[0], "the request URL has no scheme")
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

// payloadBlock matches the output block of the README's payload command, and the
// JSON object in it.
var payloadBlock = regexp.MustCompile("(?ms)^<!-- run: go run ./examples/quickstart/payload -->\n```text\n.*?^(\\{\n.*?^\\})\n```")

// TestReadmePayloadIsWhatTheModelGets reads the payload the README shows (test/docs
// keeps it equal to what the command prints) and holds it to what agentbreaker builds
// for an open breaker on weather-api that has been returning 5xx, and to the default
// policy: a delay of at least the cooldown, at most the cooldown stretched by the
// jitter.
func TestReadmePayloadIsWhatTheModelGets(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	m := payloadBlock.FindStringSubmatch(string(readme))
	require.NotNil(t, m, "the README shows the payload command's output")
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(m[1]), &shown))
	secs, ok := shown["retry_after_seconds"].(float64)
	require.True(t, ok, "%v", shown)
	p := breaker.Policy{}.WithDefaults()
	require.GreaterOrEqual(t, secs, p.Cooldown.Seconds()-1, "a question later than the trip")
	require.LessOrEqual(t, secs, math.Ceil(p.Cooldown.Seconds()*(1+p.Jitter)))
	built, err := json.Marshal(payloads.Unavailable(payloads.Info{
		Dependency: "weather-api", Tool: "get_weather", Class: classify.ClassHTTP5xx, RetryAfter: time.Duration(secs) * time.Second,
	}))
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, json.Unmarshal(built, &want))
	require.Equal(t, want, shown)
}

// TestPayloadCommandRunsTheQuickStartsTool holds examples/quickstart/payload to the
// Quick start: its getWeather is the Quick start's, declaration for declaration, so
// the payload the README shows is the one that tool leads to.
func TestPayloadCommandRunsTheQuickStartsTool(t *testing.T) {
	t.Parallel()
	quick := funcSource(t, quickStartFile, "getWeather")
	payload := funcSource(t, "examples/quickstart/payload/main.go", "getWeather")
	require.Equal(t, quick, payload)
	require.Equal(t, funcSource(t, quickStartFile, "weatherArgs"), funcSource(t, "examples/quickstart/payload/main.go", "weatherArgs"))
}

// funcSource returns the printed source of the top-level function or type name in
// file, without its doc comment.
func funcSource(t *testing.T, file, name string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(repoRoot, file), nil, 0)
	require.NoError(t, err)
	for _, d := range f.Decls {
		var node any
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == name {
				node = d
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				if ts, ok := sp.(*ast.TypeSpec); ok && ts.Name.Name == name {
					node = ts
				}
			}
		}
		if node != nil {
			var b strings.Builder
			require.NoError(t, printer.Fprint(&b, fset, node))
			return b.String()
		}
	}
	t.Fatalf("%s declares no %s", file, name)
	return ""
}
