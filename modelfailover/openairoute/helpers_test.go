package openairoute_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"log/slog"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
)

const (
	gpt   = "gpt-4.1"
	flash = "gemini-2.5-flash"
)

// testPolicy trips a model breaker on two calls at 50% and keeps it open 30 s,
// without jitter, so the figures are exact.
var testPolicy = breaker.Policy{
	MinimumCalls: 2, Window: time.Minute, Cooldown: 30 * time.Second,
	CooldownMultiplier: 1, MaxCooldown: 30 * time.Second, Jitter: -1, Version: "test-v1",
}

// client says how the OpenAI route's model is built.
type client int

const (
	sdkDefaults client = iota // openaimodel.NewModel, openai-go's default retries, NewTransport
	viaHelper                 // openairoute.New
	noTransport               // openaimodel.NewModel on the server's plain client
)

func (c client) String() string {
	return [...]string{"openai-go defaults", "openairoute", "no transport"}[c]
}

// path says how the agent uses the Failover.
type path int

const (
	asModel     path = iota // the Failover is the agent's model
	asCallbacks             // the agent keeps Routes[0]'s model and uses the callbacks
)

func (p path) String() string { return [...]string{"Failover", "callbacks"}[p] }

type setup struct {
	openaiFirst bool // the OpenAI route is the primary
	client      client
	path        path
	geminiRetry bool // the Gemini client sets genai's RetryOptions (5 attempts)
	mutate      func(*modelfailover.Config)
}

type harness struct {
	t      *testing.T
	clock  *timerClock
	deps   *dependencymap.Map
	f      *modelfailover.Failover
	runner *runner.Runner
	oai    *openaifake.Server
	gem    *geminifake.Server
	calls  *callLog
	logs   *syncBuf
}

func (h *harness) openaiBreaker() *breaker.Breaker {
	b, err := h.deps.ForModel(gpt, "openai")
	require.NoError(h.t, err)
	return b
}

func (h *harness) geminiBreaker() *breaker.Breaker {
	b, err := h.deps.ForModel(flash, "gemini")
	require.NoError(h.t, err)
	return b
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	h := &harness{t: t, clock: newTimerClock(), calls: &callLog{}, logs: &syncBuf{},
		oai: openaifake.Start(t, openaifake.Config{Name: "openai", Text: "answer from openai"}),
		gem: geminifake.Start(t, geminifake.Config{Name: "gemini", Reply: geminifake.Reply{Text: "answer from gemini"}})}
	var err error
	h.deps, err = dependencymap.New(dependencymap.Config{Clock: h.clock, ModelDefault: testPolicy})
	require.NoError(t, err)

	var f *modelfailover.Failover // set below; the builders run after New for the callbacks path
	openaiLLM := func(forAgent bool) model.LLM {
		wrap := modelfailover.NewTransport
		if forAgent {
			wrap = func(rt http.RoundTripper) http.RoundTripper { return f.Transport(rt) }
		}
		var llm model.LLM
		switch s.client {
		case viaHelper:
			cfg := openairoute.Config{Model: gpt, Client: openaimodel.ClientConfig{APIKey: "k", BaseURL: h.oai.URL(),
				HTTPClient: &http.Client{Transport: h.oai.Transport()}}}
			if forAgent {
				cfg.Failover = f
			}
			llm, err = openairoute.New(t.Context(), cfg)
		case noTransport:
			llm, err = openaimodel.NewModel(t.Context(), gpt, &openaimodel.ClientConfig{APIKey: "k", BaseURL: h.oai.URL(),
				HTTPClient: &http.Client{Transport: h.oai.Transport()}})
		default:
			llm, err = openaimodel.NewModel(t.Context(), gpt, &openaimodel.ClientConfig{APIKey: "k", BaseURL: h.oai.URL(),
				HTTPClient: &http.Client{Transport: wrap(h.oai.Transport())}})
		}
		require.NoError(t, err)
		return llm
	}
	geminiLLM := func(forAgent bool) model.LLM {
		wrap := modelfailover.NewTransport
		if forAgent {
			wrap = func(rt http.RoundTripper) http.RoundTripper { return f.Transport(rt) }
		}
		cc := h.gem.ClientConfig(wrap)
		if s.geminiRetry {
			cc.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{} // genai's defaults: 5 attempts
		}
		llm, err := gemini.NewModel(t.Context(), flash, cc)
		require.NoError(t, err)
		return llm
	}
	oRoute := modelfailover.Route{Model: gpt, Region: "openai"}
	gRoute := modelfailover.Route{Model: flash, Region: "gemini"}
	routes := []modelfailover.Route{gRoute, oRoute}
	if s.openaiFirst {
		routes = []modelfailover.Route{oRoute, gRoute}
	}
	// Every fallback has its own LLM; the primary's is the agent's own on the
	// callbacks path, built once f exists.
	for i := range routes {
		if i == 0 && s.path == asCallbacks {
			continue
		}
		if routes[i].Region == "openai" {
			routes[i].LLM = openaiLLM(false)
		} else {
			routes[i].LLM = geminiLLM(false)
		}
	}
	cfg := modelfailover.Config{Routes: routes, Breakers: h.deps, Clock: h.clock, Observer: h.calls,
		Logger: slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if s.path == asCallbacks {
		// The primary's LLM is the agent's; the Route needs one only for Failover.
		cfg.Routes[0].LLM = nil
	}
	if s.mutate != nil {
		s.mutate(&cfg)
	}
	if s.path == asModel && cfg.Routes[0].LLM == nil {
		t.Fatal("no primary model")
	}
	f, err = modelfailover.New(cfg)
	require.NoError(t, err)
	h.f = f
	acfg := llmagent.Config{Name: "assistant", Instruction: "Answer briefly.", Model: f, Mode: llmagent.ModeChat}
	if s.path == asCallbacks {
		if s.openaiFirst {
			acfg.Model = openaiLLM(true)
		} else {
			acfg.Model = geminiLLM(true)
		}
		acfg.BeforeModelCallbacks = []llmagent.BeforeModelCallback{f.BeforeModel}
		acfg.AfterModelCallbacks = []llmagent.AfterModelCallback{f.AfterModel}
		acfg.OnModelErrorCallbacks = []llmagent.OnModelErrorCallback{f.OnModelError}
	}
	a, err := llmagent.New(acfg)
	require.NoError(t, err)
	h.runner, err = runner.New(runner.Config{AppName: "openairoute-test", Agent: a,
		SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	return h
}

// result is what one turn produced.
type result struct {
	final string // the text of the last final model event
	err   error  // the run's error, if any
	meta  map[string]any
}

var sessions struct {
	sync.Mutex
	n int
}

// turn runs one user message in a fresh session.
func (h *harness) turn(ctx context.Context, stream bool) result {
	h.t.Helper()
	sessions.Lock()
	sessions.n++
	id := fmt.Sprintf("s%d", sessions.n)
	sessions.Unlock()
	rc := agent.RunConfig{}
	if stream {
		rc.StreamingMode = agent.StreamingModeSSE
	}
	var res result
	for ev, err := range h.runner.Run(ctx, "user", id, genai.NewContentFromText("hello?", genai.RoleUser), rc) {
		if err != nil {
			res.err = err
			break
		}
		if ev.Author == "user" || ev.Partial {
			continue
		}
		res.meta = ev.CustomMetadata
		if ev.Content != nil {
			var b strings.Builder
			for _, p := range ev.Content.Parts {
				b.WriteString(p.Text)
			}
			res.final = b.String()
		}
		if ev.ErrorMessage != "" && res.err == nil {
			res.err = errString(ev.ErrorCode + ": " + ev.ErrorMessage)
		}
	}
	return res
}

type errString string

func (e errString) Error() string { return string(e) }

// callLog records the Failover's calls.
type callLog struct {
	mu    sync.Mutex
	calls []modelfailover.Call
}

func (c *callLog) ObserveFailover(context.Context, modelfailover.Event) {}
func (c *callLog) ObserveCall(_ context.Context, call modelfailover.Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

func (c *callLog) last(t *testing.T) modelfailover.Call {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.calls, "no call observed")
	return c.calls[len(c.calls)-1]
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// timerClock is a fake clock with timers (modelfailover.TimerClock), so the
// Failover's time bounds fire when a test advances it and never on their own.
type timerClock struct {
	*clock.Fake
	mu     sync.Mutex
	cond   *sync.Cond
	timers map[*fakeTimer]struct{}
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func newTimerClock() *timerClock {
	c := &timerClock{Fake: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), timers: map[*fakeTimer]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *timerClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &fakeTimer{at: c.Now().Add(d), f: f}
	c.mu.Lock()
	c.timers[t] = struct{}{}
	c.cond.Broadcast()
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[t]
		delete(c.timers, t)
		c.cond.Broadcast()
		return ok
	}
}

func (c *timerClock) Advance(d time.Duration) time.Time {
	now := c.Fake.Advance(d)
	c.mu.Lock()
	var due []*fakeTimer
	for t := range c.timers {
		if !t.at.After(now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
	return now
}

// waitArmed blocks until at least n timers are armed. It waits on a condition,
// not on real time; testwait.Bound only ends a wait that would never end.
func (c *timerClock) waitArmed(t *testing.T, n int) {
	t.Helper()
	expired := false
	stop := time.AfterFunc(testwait.Bound, func() {
		c.mu.Lock()
		expired = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		if expired {
			t.Fatalf("waited %v for %d armed timers; %d are armed", testwait.Bound, n, len(c.timers))
		}
		c.cond.Wait()
	}
}

func request() *model.LLMRequest {
	return &model.LLMRequest{Contents: genai.Text("Hi")}
}
