package modelfailover_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

const (
	pro   = "gemini-2.5-pro"
	flash = "gemini-2.5-flash"
)

// testPolicy trips a model breaker on two calls at 50% and keeps it open 30s,
// without jitter, so tests can count requests exactly.
var testPolicy = breaker.Policy{
	MinimumCalls:       2,
	Window:             time.Minute,
	Cooldown:           30 * time.Second,
	CooldownMultiplier: 1,
	MaxCooldown:        30 * time.Second,
	Jitter:             -1,
	Version:            "test-v1",
}

// region is one local endpoint and the real adk Gemini model pointed at it.
type region struct {
	name   string
	model  string
	server *geminifake.Server
	llm    model.LLM
}

// llmThrough is the region's model on a client whose transport is f.Transport, as an
// agent that keeps its own model and uses the failover's callbacks must have.
func (r *region) llmThrough(t *testing.T, f *modelfailover.Failover) model.LLM {
	t.Helper()
	llm, err := gemini.NewModel(t.Context(), r.model, r.server.ClientConfig(f.Transport))
	require.NoError(t, err)
	return llm
}

func newRegion(t *testing.T, name, modelName string) *region {
	t.Helper()
	s := geminifake.Start(t, geminifake.Config{Name: name, Reply: geminifake.Reply{Text: "answer from " + name}})
	llm, err := gemini.NewModel(t.Context(), modelName, s.ClientConfig(modelfailover.NewTransport))
	require.NoError(t, err)
	return &region{name: name, model: modelName, server: s, llm: llm}
}

func (r *region) route() modelfailover.Route {
	return modelfailover.Route{Model: r.model, Region: r.name, LLM: r.llm}
}

// requests is how many generate requests reached the region.
func (r *region) requests() int { return r.server.RequestsFor(r.model) }

func (r *region) fail(t *testing.T, f geminifake.Failure) {
	t.Helper()
	require.NoError(t, r.server.Fail(f))
}

// harness is an agent on the real adk runner whose model is a Failover over
// local regions, with a fake clock for the breakers and recorders for every
// loud signal.
type harness struct {
	t       *testing.T
	clock   *timerClock
	deps    *dependencymap.Map
	f       *modelfailover.Failover
	runner  *runner.Runner
	logs    *logBuffer
	events  *eventLog
	regions []*region
}

type harnessConfig struct {
	regions []*region
	// agentModel, when set, makes the agent keep this model and use the
	// failover's callbacks instead of the failover model.
	agentModel model.LLM
	// agentModelFor, when set, builds agentModel once the Failover exists (for a
	// client using its Transport).
	agentModelFor func(*modelfailover.Failover) model.LLM
	routes        []modelfailover.Route // defaults to one route per region
	mutate        func(*modelfailover.Config)
	agentCfg      func(*llmagent.Config)
	// defaultPolicy gives the model breakers dependencymap's default model policy
	// instead of testPolicy.
	defaultPolicy bool
}

func newHarness(t *testing.T, hc harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, clock: newTimerClock(), logs: &logBuffer{}, events: &eventLog{}, regions: hc.regions}
	var err error
	policy := testPolicy
	if hc.defaultPolicy {
		policy = breaker.Policy{}
	}
	h.deps, err = dependencymap.New(dependencymap.Config{Clock: h.clock, ModelDefault: policy})
	require.NoError(t, err)
	routes := hc.routes
	if routes == nil {
		for _, r := range hc.regions {
			routes = append(routes, r.route())
		}
	}
	cfg := modelfailover.Config{
		Routes:     routes,
		Breakers:   h.deps,
		Clock:      h.clock,
		Logger:     slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnFailover: h.events.add,
		Observer:   h.events,
	}
	if hc.mutate != nil {
		hc.mutate(&cfg)
	}
	h.f, err = modelfailover.New(cfg)
	require.NoError(t, err)

	// Mode is set because adk v2.2.0's runner writes it on the first Run of a root
	// agent that has none (runner.go:210): two first Runs at once race there.
	acfg := llmagent.Config{Name: "assistant", Instruction: "Answer briefly.", Model: h.f, Mode: llmagent.ModeChat}
	if hc.agentModelFor != nil {
		hc.agentModel = hc.agentModelFor(h.f)
	}
	if hc.agentModel != nil {
		acfg.Model = hc.agentModel
		acfg.BeforeModelCallbacks = []llmagent.BeforeModelCallback{h.f.BeforeModel}
		acfg.AfterModelCallbacks = []llmagent.AfterModelCallback{h.f.AfterModel}
		acfg.OnModelErrorCallbacks = []llmagent.OnModelErrorCallback{h.f.OnModelError}
	}
	if hc.agentCfg != nil {
		hc.agentCfg(&acfg)
	}
	a, err := llmagent.New(acfg)
	require.NoError(t, err)
	h.runner, err = runner.New(runner.Config{AppName: "failover-test", Agent: a,
		SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	return h
}

// result is what one turn produced.
type result struct {
	partials []string           // texts of partial events, in order
	finals   []string           // texts of final (non-partial) model events
	meta     []map[string]any   // CustomMetadata of every model event
	err      error              // the run's error, if any
	events   []*session.Event   // every event
	last     *model.LLMResponse // the last model response
	errCodes []string           // ErrorCode of model events that had one
	_        struct{}           // keep literal construction keyed
}

func text(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// turn runs one user message through the runner in its own session.
func (h *harness) turn(ctx context.Context, session string, streaming bool) result {
	h.t.Helper()
	cfg := agent.RunConfig{}
	if streaming {
		cfg.StreamingMode = agent.StreamingModeSSE
	}
	var res result
	for ev, err := range h.runner.Run(ctx, "user", session, genai.NewContentFromText("hello?", genai.RoleUser), cfg) {
		if err != nil {
			res.err = err
			break
		}
		res.events = append(res.events, ev)
		if ev.Author == "user" {
			continue
		}
		resp := ev.LLMResponse
		res.last = &resp
		res.meta = append(res.meta, resp.CustomMetadata)
		if resp.ErrorCode != "" {
			res.errCodes = append(res.errCodes, resp.ErrorCode)
		}
		if resp.Partial {
			res.partials = append(res.partials, text(resp.Content))
		} else {
			res.finals = append(res.finals, text(resp.Content))
		}
	}
	return res
}

var sessionSeq struct {
	sync.Mutex
	n int
}

// newSession returns a fresh session id, so turns do not share history.
func newSession() string {
	sessionSeq.Lock()
	defer sessionSeq.Unlock()
	sessionSeq.n++
	return fmt.Sprintf("s%d", sessionSeq.n)
}

func (h *harness) breaker(r *region) *breaker.Breaker {
	b, err := h.deps.ForModel(r.model, r.name)
	require.NoError(h.t, err)
	return b
}

// counts returns each region's request count.
func (h *harness) counts() []int {
	out := make([]int, len(h.regions))
	for i, r := range h.regions {
		out[i] = r.requests()
	}
	return out
}

// logBuffer is a concurrency-safe sink for JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns the log records at or above level.
func (l *logBuffer) records(t *testing.T, level string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m["level"] == level {
			out = append(out, m)
		}
	}
	return out
}

// eventLog records hook calls and Observer calls.
type eventLog struct {
	mu       sync.Mutex
	hook     []modelfailover.Event
	observed []modelfailover.Event
	calls    []modelfailover.Call
}

func (e *eventLog) add(ev modelfailover.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hook = append(e.hook, ev)
}

func (e *eventLog) ObserveFailover(_ context.Context, ev modelfailover.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observed = append(e.observed, ev)
}

func (e *eventLog) ObserveCall(_ context.Context, c modelfailover.Call) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, c)
}

func (e *eventLog) observedList() []modelfailover.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]modelfailover.Event(nil), e.observed...)
}

func (e *eventLog) failovers() []modelfailover.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]modelfailover.Event(nil), e.hook...)
}

func (e *eventLog) callList() []modelfailover.Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]modelfailover.Call(nil), e.calls...)
}

func (e *eventLog) servedBy() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.calls {
		out = append(out, c.ServedBy.String()+":"+c.Route.Name)
	}
	return out
}

func agentSSE() agent.RunConfig { return agent.RunConfig{StreamingMode: agent.StreamingModeSSE} }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// streamed is one event of a streaming turn, as streamTurn delivers it.
type streamed struct {
	partial bool
	text    string
	meta    map[string]any
	err     error
}

// streamTurn runs one streaming turn on its own goroutine and hands its non-user events
// over a channel, so a test can step a gated reply chunk by chunk. The channel closes
// when the turn ends.
func streamTurn(h *harness, message string) <-chan streamed {
	items := make(chan streamed)
	go func() {
		defer close(items)
		for ev, err := range h.runner.Run(context.Background(), "user", newSession(),
			genai.NewContentFromText(message, genai.RoleUser), agentSSE()) {
			if err != nil {
				items <- streamed{err: err}
				return
			}
			if ev.Author != "user" {
				items <- streamed{partial: ev.Partial, text: text(ev.Content), meta: ev.CustomMetadata}
			}
		}
	}()
	return items
}
