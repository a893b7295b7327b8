package models

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

const (
	gptModel   = "gpt-4.1"
	flashModel = "gemini-2.5-flash"
	region     = "us"
	// turnWall bounds every turn in wall time, so that an SDK that sleeps a stated
	// delay (openai-go takes Retry-After verbatim) fails the test instead of holding it.
	turnWall = 10 * time.Second
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// logBuf is a concurrency-safe sink for the Failover's log records.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// errorRecords returns the log lines at level ERROR.
func (l *logBuf) errorRecords() []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// world is one test's fake clock, dependency map and log sink.
type world struct {
	clk  *clock.Fake
	deps *dependencymap.Map
	logs *logBuf

	mu     sync.Mutex
	events []modelfailover.Event
}

// announced returns the failovers OnFailover received, in order.
func (w *world) announced() []modelfailover.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]modelfailover.Event(nil), w.events...)
}

// tripOnFirst is a model policy that opens on the first failure, with a fixed 30 s
// cooldown and no jitter, so that a test can see the reopen time exactly.
var tripOnFirst = breaker.Policy{MinimumCalls: 1, FailureRateThreshold: 0.5, Cooldown: 30 * time.Second, Jitter: -1}

// newWorld builds a dependency map on a fake clock. With trip set, the primary
// (gpt-4.1@us, or gemini-2.5-pro@us) opens on its first failure; otherwise every route
// has the default (slow) model policy.
func newWorld(t *testing.T, trip bool) *world {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := dependencymap.Config{Clock: clk, PolicyVersion: "test-1"}
	if trip {
		cfg.Models = []dependencymap.ModelEndpoint{
			{Model: gptModel, Region: region, Policy: tripOnFirst},
			{Model: "gemini-2.5-pro", Region: region, Policy: tripOnFirst},
		}
	}
	return &world{clk: clk, deps: dependencymap.MustNew(cfg), logs: &logBuf{}}
}

func (w *world) failover(t *testing.T, routes ...modelfailover.Route) *modelfailover.Failover {
	t.Helper()
	f, err := modelfailover.New(modelfailover.Config{
		Routes:   routes,
		Breakers: w.deps,
		Clock:    w.clk,
		Logger:   slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnFailover: func(e modelfailover.Event) {
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (w *world) breaker(t *testing.T, modelName string) *breaker.Breaker {
	t.Helper()
	b, err := w.deps.ForModel(modelName, region)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openAIDefault is adk-go's openaimodel over openai-go's default client (MaxRetries 2),
// with rt as its HTTP client's transport, as docs/model-failover.md says to wire it.
func openAIDefault(t *testing.T, srv *apiServer, rt http.RoundTripper, opts ...option.RequestOption) model.LLM {
	t.Helper()
	llm, err := openaimodel.NewModel(t.Context(), gptModel, &openaimodel.ClientConfig{
		APIKey: "key", BaseURL: srv.URL + "/v1", HTTPClient: &http.Client{Transport: rt}, Options: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// geminiModel is adk-go's Gemini model over the real genai client, with rt as its
// transport and, when retries is set, genai's HTTPOptions.RetryOptions on (5 attempts).
func geminiModel(t *testing.T, srv *apiServer, name string, rt http.RoundTripper, retries bool) model.LLM {
	t.Helper()
	cfg := &genai.ClientConfig{
		APIKey: "key", Backend: genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: rt},
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	}
	if retries {
		attempts := int32(5)
		delay := 0.01 // keep a broken promise cheap in wall time
		cfg.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{Attempts: &attempts, InitialDelay: &delay, MaxDelay: &delay}
	}
	llm, err := gemini.NewModel(t.Context(), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// harness runs turns of an agent through adk-go's real runner.
func harness(t *testing.T, cfg llmagent.Config, rc ...agent.RunConfig) *breakertest.Harness {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "assistant"
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc := breakertest.HarnessConfig{Agent: a}
	if len(rc) > 0 {
		hc.RunConfig = rc[0]
	}
	return breakertest.MustNewHarness(hc)
}

func asModel(f *modelfailover.Failover) llmagent.Config {
	return llmagent.Config{Model: f}
}

func asCallbacks(f *modelfailover.Failover, own model.LLM) llmagent.Config {
	return llmagent.Config{
		Model:                 own,
		BeforeModelCallbacks:  []llmagent.BeforeModelCallback{f.BeforeModel},
		AfterModelCallbacks:   []llmagent.AfterModelCallback{f.AfterModel},
		OnModelErrorCallbacks: []llmagent.OnModelErrorCallback{f.OnModelError},
	}
}

// turn runs one turn in a fresh session, bounded by turnWall in wall time.
func turn(t *testing.T, h *breakertest.Harness) *breakertest.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnWall)
	defer cancel()
	sid, err := h.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tr, err := h.Run(ctx, sid, "What is the weather in Paris?")
	if ctx.Err() != nil {
		t.Fatalf("the turn took %v of wall time and hit the test's bound: an SDK slept inside the attempt", time.Since(start))
	}
	if err != nil {
		tr = &breakertest.Turn{Errs: []error{err}}
	}
	return tr
}

// turnError returns the first error of a turn, or the error message of an event.
func turnError(tr *breakertest.Turn) string {
	if len(tr.Errs) > 0 {
		return tr.Errs[0].Error()
	}
	for _, ev := range tr.Events {
		if ev.ErrorMessage != "" || ev.ErrorCode != "" {
			return ev.ErrorCode + ": " + ev.ErrorMessage
		}
	}
	return ""
}

// lastMeta returns the custom metadata of the last event that has any.
func lastMeta(tr *breakertest.Turn) map[string]any {
	for i := len(tr.Events) - 1; i >= 0; i-- {
		if md := tr.Events[i].CustomMetadata; md != nil {
			return md
		}
	}
	return nil
}
