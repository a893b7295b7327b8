// Package quickstart checks, from the outside, what README.md's Quick start and
// docs/failures.md promise about examples/quickstart: it builds the program and runs it.
package quickstart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-o", binary, "./examples/quickstart")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building examples/quickstart: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// run starts the built program with exactly env (plus PATH and HOME) and args, bounded
// in wall time.
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("quickstart did not end; stderr:\n%s", e.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return o.String(), e.String(), exit
}

// README.md, Quick start: "Without the variables or a question it says in one line what
// is missing".
func TestQuickstartSaysWhatIsMissing(t *testing.T) {
	const (
		key      = "GOOGLE_API_KEY"
		url      = "WEATHER_API_URL"
		question = "What is the weather in Paris?"
	)
	cases := []struct {
		name    string
		env     []string
		args    []string
		missing []string // words the line must name
		present []string // words it must not name
	}{
		{"nothing", nil, nil, []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "WEATHER_API_URL", "question"}, nil},
		{"no key", []string{url + "=http://127.0.0.1:1/"}, []string{question}, []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, []string{"WEATHER_API_URL", "question"}},
		{"no url", []string{key + "=k"}, []string{question}, []string{"WEATHER_API_URL"}, []string{"API key", "question"}},
		{"gemini key, no url", []string{"GEMINI_API_KEY=k"}, []string{question}, []string{"WEATHER_API_URL"}, []string{"API key", "question"}},
		{"no question", []string{key + "=k", url + "=http://127.0.0.1:1/"}, nil, []string{"question"}, []string{"API key", "WEATHER_API_URL"}},
		{"blank question", []string{key + "=k", url + "=http://127.0.0.1:1/"}, []string{"  "}, []string{"question"}, []string{"API key", "WEATHER_API_URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, exit := run(t, c.env, c.args...)
			if exit == 0 {
				t.Errorf("exit status 0, want a failure")
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || lines[0] == "" {
				t.Fatalf("stderr has %d lines, want one:\n%s", len(lines), stderr)
			}
			for _, m := range c.missing {
				if !strings.Contains(lines[0], m) {
					t.Errorf("the line %q does not name %q", lines[0], m)
				}
			}
			for _, p := range c.present {
				if strings.Contains(lines[0], p) {
					t.Errorf("the line %q names %q, which was given", lines[0], p)
				}
			}
		})
	}
}

// geminiScript is a local Gemini API server that asks for get_weather calls times, one
// per model request, and then answers with text. It records every function response it
// was sent.
type geminiScript struct {
	calls    int
	requests atomic.Int64
	mu       sync.Mutex
	results  []map[string]any
}

func (g *geminiScript) handler(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	var req struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &req)
	n := 0
	var last map[string]any
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				n++
				last = p.FunctionResponse.Response
			}
		}
	}
	if last != nil {
		g.mu.Lock()
		g.results = append(g.results, last)
		g.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	if n < g.calls {
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP"}]}`)
		return
	}
	fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"I could not get the weather."}]},"finishReason":"STOP"}]}`)
}

// README.md, Quick start: "a WEATHER_API_URL that net/http cannot send (no scheme, no
// host) is logged once as the program's own fault and never opens the breaker", and
// docs/failures.md: a request net/http refused to send because of how it was built is
// "request_config, FAILED_BEFORE_SEND, neutral, never retried", "it never counts against
// the breaker, the model gets the failed payload ("this agent's settings for it are
// missing or invalid"), and the log gets one WARN record per dependency and class,
// event=config_fault, with the cause in a fixed phrase (never the URL, which may carry a
// key)". The model asks for the tool 25 times in one turn, more than the tool policy's
// volume gate of 20 calls, so a counted fault would open the breaker.
func TestQuickstartMisconfiguredURL(t *testing.T) {
	for _, bad := range []string{"weather.example/v1/current?key=SECRET123", "http:///v1/current?key=SECRET123", ""} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			g := &geminiScript{calls: 25}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(g.handler))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv.Listener = ln
			srv.Start()
			defer srv.Close()
			url := bad
			if url == "" {
				// docs/failures.md's own example: an empty scheme, the URL was "" + "?city=Paris".
				url = " "
			}
			stdout, stderr, exit := run(t, []string{"GOOGLE_API_KEY=k", "GOOGLE_GEMINI_BASE_URL=" + srv.URL, "WEATHER_API_URL=" + url}, "What is the weather in Paris?")
			if exit != 0 {
				t.Fatalf("exit %d, stderr:\n%s", exit, stderr)
			}
			if !strings.Contains(stdout, "I could not get the weather.") {
				t.Errorf("stdout %q, want the model's answer", stdout)
			}
			var warns []string
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Contains(line, "WARN") {
					warns = append(warns, line)
				}
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "event=config_fault") {
				t.Errorf("WARN records %q, want exactly one with event=config_fault; stderr:\n%s", warns, stderr)
			}
			if strings.Contains(stderr, "SECRET123") || (bad != "" && strings.Contains(stderr, "weather.example")) {
				t.Errorf("the log carries the URL:\n%s", stderr)
			}
			g.mu.Lock()
			results := append([]map[string]any(nil), g.results...)
			g.mu.Unlock()
			if len(results) != 25 {
				t.Fatalf("the model was sent %d tool results, want 25", len(results))
			}
			for i, r := range results {
				b, _ := json.Marshal(r)
				s := string(b)
				if strings.Contains(s, "unavailable") {
					t.Fatalf("tool result %d is an unavailable payload (the breaker opened): %s", i, s)
				}
				if !strings.Contains(s, "missing or invalid") {
					t.Errorf("tool result %d does not say the settings are missing or invalid: %s", i, s)
				}
				if strings.Contains(s, "SECRET123") {
					t.Errorf("tool result %d carries the URL: %s", i, s)
				}
				if i == 0 || i == 24 {
					t.Logf("tool result %d: %s", i, s)
				}
			}
		})
	}
}
