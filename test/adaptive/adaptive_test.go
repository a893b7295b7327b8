// Package adaptive_test checks, from the outside, what docs/adaptive-concurrency.md
// promises about the adaptive concurrency limit (package adaptivelimit, set with
// dependencymap.Dependency.Adaptive), through adk-go's runner with parallel tool calls
// against a local server that holds the calls and counts what reaches it.
package adaptive_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/throttle"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

const initialLimit = 5

type fixture struct {
	clk  *clock.Fake
	srv  *breakertest.Server
	deps *dependencymap.Map
	h    *breakertest.Harness
	lim  *adaptivelimit.Limiter
	brk  *breaker.Breaker

	mu     sync.Mutex
	events []callbacks.Event
	logs   syncBuffer

	wg sync.WaitGroup
}

// newFixture: dependency "search" (web_search normal, suggest low) with an adaptive
// limit starting at 5 and a breaker that opens on its first failure. The fake clock
// never reaches an update interval, so the limit stays 5.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(time.Time{}), srv: breakertest.NewServer(t)}
	f.srv.Set(breakertest.Behavior{Hang: true, Status: 200, Body: "results"})
	f.deps = dependencymap.MustNew(dependencymap.Config{Clock: f.clk, Dependencies: map[string]dependencymap.Dependency{
		"search": {
			Tools:      []string{"web_search", "suggest"},
			Priorities: map[string]throttle.Priority{"suggest": throttle.Low},
			Adaptive:   &adaptivelimit.Config{MinLimit: 2, MaxLimit: 50, InitialLimit: initialLimit},
			Policy: breaker.Policy{MinimumCalls: 1, FailureRateThreshold: 0.5, Window: time.Minute,
				Cooldown: 30 * time.Second, CooldownMultiplier: 1, Jitter: -1},
		},
	}})
	f.lim = f.deps.Limiter("search")
	if f.lim == nil {
		t.Fatal("Map.Limiter(\"search\") = nil with Dependency.Adaptive set")
	}
	var ok bool
	if f.brk, ok = f.deps.Get("search"); !ok {
		t.Fatal("no search breaker")
	}
	guard := callbacks.MustNew(callbacks.Config{Dependencies: f.deps, Clock: f.clk, Observability: callbacks.Observability{
		OnEvent: func(e callbacks.Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
		Logger: slog.New(slog.NewJSONHandler(&f.logs, nil)),
	}})
	var tools []tool.Tool
	for _, name := range []string{"web_search", "suggest"} {
		tl, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: name, URL: f.srv.URL, TypedErrors: true})
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	// The user's text lists the calls the model makes at once: "web_search suggest ...".
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		last := r.Contents[len(r.Contents)-1]
		var calls []*genai.FunctionCall
		for i, name := range strings.Fields(last.Parts[0].Text) {
			calls = append(calls, &genai.FunctionCall{Name: name, Args: map[string]any{"query": fmt.Sprintf("q%d", i)}})
		}
		return breakertest.Calls(calls...)
	}})
	ag, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	f.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin.Plugin{guard.Plugin()}})
	t.Cleanup(func() { f.srv.Release(); f.wg.Wait() })
	return f
}

func (f *fixture) turn(t *testing.T, ctx context.Context, calls string) *breakertest.Turn {
	t.Helper()
	sid, err := f.h.NewSession(ctx)
	if err != nil {
		t.Error(err)
		return nil
	}
	turn, err := f.h.Run(ctx, sid, calls)
	if err != nil {
		t.Errorf("turn %q: %v", calls, err)
	}
	return turn
}

// hold starts a turn whose admitted calls hang at the server, and waits until the
// server holds `hanging` requests in all.
func (f *fixture) hold(t *testing.T, ctx context.Context, calls string, hanging int) {
	t.Helper()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.turn(t, ctx, calls)
	}()
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound, not a wait
	defer cancel()
	if err := f.srv.WaitHanging(wctx, hanging); err != nil {
		t.Fatalf("waiting for %d calls held at the server (now %d): %v", hanging, f.srv.Hanging(), err)
	}
}

// busy counts the turn's tool results that are the bulkhead's busy payload, checking
// each is documented: "response_type agentbreaker.busy, error_class bulkhead_full".
func busy(t *testing.T, turn *breakertest.Turn) int {
	t.Helper()
	n := 0
	for _, fr := range turn.FunctionResponses() {
		if fr.Response[payloads.KeyResponseType] == payloads.TypeBusy {
			n++
			if fr.Response[payloads.KeyErrorClass] != "bulkhead_full" {
				t.Errorf("busy payload error_class = %v, want bulkhead_full", fr.Response[payloads.KeyErrorClass])
			}
		}
	}
	return n
}

// share is docs/adaptive-concurrency.md's rule: "admitted while fewer calls are in
// flight than its share of the limit, rounded up and at least one: low 60%, normal 80%,
// high 90%, critical 100%".
func share(limit int, pct float64) int {
	return max(1, int(math.Ceil(float64(limit)*pct/100)))
}

// docs/adaptive-concurrency.md, "Who is refused": "When the limit binds, low calls are
// refused first and a critical call still finds room a normal one cannot take"; "A
// refused call is answered at once, never queued, with the bulkhead's busy payload";
// "A refusal never counts as the dependency's failure ... no number of refusals can
// open it; ... the admitted 503 then opens it". With a limit of 5: low 3, normal 4,
// critical 5.
func TestAdaptiveLimitRefusesLowestPriorityFirstAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	low, normal, critical := share(initialLimit, 60), share(initialLimit, 80), share(initialLimit, 100)
	for p, want := range map[throttle.Priority]int{throttle.Low: low, throttle.Normal: normal, throttle.Critical: critical} {
		if got := adaptivelimit.Allowed(initialLimit, p); got != want {
			t.Errorf("adaptivelimit.Allowed(%d, %v) = %d, the page's share gives %d", initialLimit, p, got, want)
		}
	}

	// Three parallel normal calls: all admitted (0, 1, 2 in flight < 4), all held.
	f.hold(t, ctx, "web_search web_search web_search", low)
	// A low call with 3 in flight: refused, and the turn ends while the others hang.
	if n := busy(t, f.turn(t, ctx, "suggest")); n != 1 {
		t.Fatalf("a low call with %d in flight (its share %d) got %d busy payloads, want 1", low, low, n)
	}
	// A normal call still has room (3 < 4).
	f.hold(t, ctx, "web_search", normal)
	// Now a normal one is refused...
	if n := busy(t, f.turn(t, ctx, "web_search")); n != 1 {
		t.Fatalf("a normal call with %d in flight got %d busy payloads, want 1", normal, n)
	}
	// ...and a critical one (throttle.WithPriority on the run's context) finds room.
	f.hold(t, throttle.WithPriority(ctx, throttle.Critical), "web_search", critical)
	if n := busy(t, f.turn(t, throttle.WithPriority(ctx, throttle.Critical), "web_search")); n != 1 {
		t.Fatalf("a critical call with %d in flight got %d busy payloads, want 1", critical, n)
	}
	// Parallel calls over the limit: every one refused at once.
	if n := busy(t, f.turn(t, ctx, "suggest web_search suggest web_search")); n != 4 {
		t.Fatalf("4 parallel calls with the limit full got %d busy payloads, want 4", n)
	}
	if n := f.srv.Requests(); n != int64(critical) {
		t.Fatalf("%d requests reached the server, want the %d admitted calls only", n, critical)
	}
	if got := f.lim.Refused(throttle.Low) + f.lim.Refused(throttle.Normal) + f.lim.Refused(throttle.Critical); got != 7 {
		t.Errorf("the limit counts %d refusals, want 7", got)
	}
	// "emits callbacks.EventBulkheadRejected with Verdict neutral and the call's
	// Priority, and an INFO record "adaptive concurrency limit reached; call refused,
	// not counted"".
	byPriority := map[throttle.Priority]int{}
	f.mu.Lock()
	for _, e := range f.events {
		if e.Kind == callbacks.EventBulkheadRejected {
			byPriority[e.Priority]++
			if e.Verdict != classify.Neutral {
				t.Errorf("EventBulkheadRejected for %s has Verdict %v, want neutral", e.Tool, e.Verdict)
			}
		}
	}
	f.mu.Unlock()
	if want := map[throttle.Priority]int{throttle.Low: 3, throttle.Normal: 3, throttle.Critical: 1}; fmt.Sprint(byPriority) != fmt.Sprint(want) {
		t.Errorf("EventBulkheadRejected by priority = %v, want %v", byPriority, want)
	}
	if n := strings.Count(f.logs.String(), `"level":"INFO","msg":"agentbreaker: adaptive concurrency limit reached; call refused, not counted"`); n != 7 {
		t.Errorf("%d INFO records \"adaptive concurrency limit reached; call refused, not counted\" for 7 refusals", n)
	}
	// Seven refusals, a breaker that opens on one failure: still closed, empty window.
	if st := f.brk.State(); st != breaker.Closed {
		t.Fatalf("after 7 refusals by the limit the breaker is %v, want closed", st)
	}
	if w := f.brk.Snapshot().Window; w.Failures != 0 {
		t.Errorf("the breaker's window holds %d failures after refusals only", w.Failures)
	}

	// The held calls finish (5 successes); admitted 503s then open the breaker once
	// they reach its 50% threshold: the fifth 503 makes 5 failures of 10 calls (had the
	// 7 refusals counted, the first would have opened it).
	f.srv.Set(breakertest.Status(503))
	f.srv.Release()
	f.wg.Wait()
	for i := 1; i <= 5; i++ {
		f.turn(t, ctx, "web_search")
		if st := f.brk.State(); (st == breaker.Open) != (i == 5) {
			t.Fatalf("after %d admitted 503s beside 5 successes the breaker is %v", i, st)
		}
	}
}

// docs/adaptive-concurrency.md, "How it composes": "A forced state overrides all three:
// a breaker forced open refuses everything, one forced closed sends everything and
// neither the throttle nor the limit is asked, and the call takes no place in the
// limit"; "the breaker decides a total outage: open, the call is short-circuited (the
// limit is not asked)".
func TestForcedBreakerStateOverridesTheAdaptiveLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.brk.ForceClosed("test: operator")
	// Eight parallel calls, four of them low, on a limit of 5: all sent.
	f.hold(t, ctx, "suggest suggest suggest suggest web_search web_search web_search web_search", 8)
	if n := f.lim.InFlight(); n != 0 {
		t.Errorf("forced closed: the limit counts %d calls in flight, want 0 (no place in the limit)", n)
	}
	// Two more on top (10 in flight, twice the limit): sent as well, held too.
	f.hold(t, ctx, "suggest web_search", 10)
	if n := f.lim.InFlight(); n != 0 {
		t.Errorf("forced closed: the limit counts %d calls in flight, want 0", n)
	}
	f.srv.Release()
	f.wg.Wait()
	if n := f.srv.Requests(); n != 10 {
		t.Errorf("forced closed: %d requests reached the server, want all 10", n)
	}

	f.srv.Set(breakertest.OK("results"))
	f.brk.ForceOpen("test: operator")
	before := f.srv.Requests()
	turn := f.turn(t, ctx, "suggest web_search web_search")
	if len(turn.FunctionResponses()) != 3 {
		t.Fatalf("forced open: %d tool results for 3 calls", len(turn.FunctionResponses()))
	}
	for _, fr := range turn.FunctionResponses() {
		if rt := fr.Response[payloads.KeyResponseType]; rt != payloads.TypeUnavailable {
			t.Errorf("forced open: a call got %v, want %s", rt, payloads.TypeUnavailable)
		}
	}
	if n := f.srv.Requests() - before; n != 0 {
		t.Errorf("forced open: %d requests reached the server", n)
	}
	for _, p := range []throttle.Priority{throttle.Low, throttle.Normal, throttle.High, throttle.Critical} {
		if r := f.lim.Refused(p); r != 0 {
			t.Errorf("the limit refused %d %v calls; a forced state means it is never asked", r, p)
		}
	}
}

// syncBuffer is a log sink the calls' goroutines may write to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
