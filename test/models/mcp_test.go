package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// mcpFront is a real go-sdk MCP server (streamable HTTP) behind a handler that, when
// told, answers every tools/call POST itself with an HTTP status, as a proxy in front of
// the server would. It counts the tools/call POSTs that reached it and the calls that
// reached the tools.
type mcpFront struct {
	calls     atomic.Int64 // tools/call POSTs that reached the front
	toolRuns  atomic.Int64 // calls that reached a tool handler
	mu        sync.Mutex
	status    int
	retryAfer string
	all       int // when set, every POST (initialize, tools/list too) is answered with it
}

func (m *mcpFront) failAll(status int) {
	m.mu.Lock()
	m.all = status
	m.mu.Unlock()
}

func (m *mcpFront) fail(status int, retryAfter string) {
	m.mu.Lock()
	m.status, m.retryAfer = status, retryAfter
	m.mu.Unlock()
}

type orderArgs struct {
	Order string `json:"order"`
}

func newMCPFront(t *testing.T) (*mcpFront, string) {
	m := &mcpFront{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	handler := func(_ context.Context, _ *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, any, error) {
		m.toolRuns.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + in.Order + " is on its way"}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup_order", Description: "Looks up an order."}, handler)
	mcp.AddTool(srv, &mcp.Tool{Name: "charge_card", Description: "Charges the card."}, handler)
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			m.mu.Lock()
			all := m.all
			m.mu.Unlock()
			if all != 0 {
				http.Error(w, "front says no: token=SECRET-FRONT", all)
				return
			}
			if msg.Method == "tools/call" {
				m.calls.Add(1)
				m.mu.Lock()
				status, ra := m.status, m.retryAfer
				m.mu.Unlock()
				if status != 0 {
					if ra != "" {
						w.Header().Set("Retry-After", ra)
					}
					http.Error(w, "front says no: token=SECRET-FRONT", status)
					return
				}
			}
		}
		inner.ServeHTTP(w, r)
	})
	hs := newLoopback(t, front)
	return m, hs.URL
}

type mcpWorld struct {
	front   *mcpFront
	clk     *clock.Fake
	deps    *dependencymap.Map
	model   *breakertest.Model
	h       *breakertest.Harness
	logs    *logBuf
	mu      sync.Mutex
	events  []callbacks.Event
	toolset *mcpguard.Toolset
	sys     *sysRecorder
}

// sysRecorder passes every call to the scripted model and keeps the system instruction
// each request carried, which breakertest.Request does not copy.
type sysRecorder struct {
	model.LLM
	mu   sync.Mutex
	seen []string
}

func (r *sysRecorder) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	var sb strings.Builder
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			sb.WriteString(p.Text)
		}
	}
	r.mu.Lock()
	r.seen = append(r.seen, sb.String())
	r.mu.Unlock()
	return r.LLM.GenerateContent(ctx, req, stream)
}

func (r *sysRecorder) instruction(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[i]
}

func (w *mcpWorld) outcomes() []callbacks.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []callbacks.Event
	for _, e := range w.events {
		if e.Kind == callbacks.EventCallOutcome {
			out = append(out, e)
		}
	}
	return out
}

// newMCPWorld wires docs/mcp.md's "Wiring": the plugin, mcpguard.New over a
// mcptoolset.Config with the server's Endpoint, an llmagent with the tool set, adk-go's
// runner. The model calls toolName once per turn, then answers.
func newMCPWorld(t *testing.T, toolName string) *mcpWorld {
	return newMCPWorldSteps(t, breakertest.Call(toolName, map[string]any{"order": "A1"}), breakertest.Text("done"))
}

func newMCPWorldSteps(t *testing.T, steps ...breakertest.Step) *mcpWorld {
	front, url := newMCPFront(t)
	w := &mcpWorld{front: front, clk: clock.NewFake(t0), logs: &logBuf{}}
	w.deps = dependencymap.MustNew(dependencymap.Config{Clock: w.clk, Dependencies: map[string]dependencymap.Dependency{
		// A policy of its own, listed without tools (docs/mcp.md): trips at 3 calls.
		"shop": {Policy: breaker.Policy{MinimumCalls: 3, Window: 5 * time.Minute, Cooldown: 30 * time.Second, Jitter: -1}},
	}})
	guard := callbacks.MustNew(callbacks.Config{
		Dependencies: w.deps,
		Clock:        w.clk,
		SideEffects:  callbacks.SideEffects{MutatingTools: []string{"charge_card"}},
		Observability: callbacks.Observability{
			Logger: slog.New(slog.NewTextHandler(w.logs, nil)),
			OnEvent: func(e callbacks.Event) {
				w.mu.Lock()
				w.events = append(w.events, e)
				w.mu.Unlock()
			},
		},
	})
	ts, err := mcpguard.New(mcpguard.Config{Dependency: "shop", Callbacks: guard, Toolset: mcptoolset.Config{Endpoint: url},
		Logger: slog.New(slog.NewTextHandler(w.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	w.toolset = ts
	w.model = breakertest.MustNewModel(breakertest.ModelConfig{
		Steps:  steps,
		Repeat: true,
	})
	w.sys = &sysRecorder{LLM: w.model}
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: w.sys, Toolsets: []tool.Toolset{ts}})
	if err != nil {
		t.Fatal(err)
	}
	w.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
	return w
}

// lastToolResult is what the model was shown for its last tool call.
func (w *mcpWorld) lastToolResult(t *testing.T) string {
	t.Helper()
	reqs := w.model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if frs := reqs[i].FunctionResponses(); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return string(b)
		}
	}
	t.Fatal("the model was never shown a tool result")
	return ""
}

// docs/mcp.md, "Outcomes": over streamable HTTP through mcpguard, with a real go-sdk
// MCP server behind a front that answers the call's POST:
//
//	| HTTP 503 from the server or a proxy in front of it | FAILED (http_5xx) | yes | failed payload ("returning server errors"), for a mutation too: nothing was applied |
//	| HTTP 429, 408 | FAILED (http_429, http_408) | yes | failed payload |
//	| HTTP 401, 403, 407 | FAILED (auth) | no (a configuration fault, logged once) | failed payload |
//
// and: "with the Retry-After header as the delay (a floor on the cooldown ...)", "the
// answer's body is never read into the error", "Such a call is not sent again", "a 503
// opens the breaker, 401s never do".
func TestMCPGuardHTTPStatusOutcomes(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		tool       string
		class      string
		counts     bool
		reason     string // words of the failed payload
	}{
		{503, "", "lookup_order", "http_5xx", true, "server errors"},
		{503, "", "charge_card", "http_5xx", true, "server errors"},
		{429, "40", "lookup_order", "http_429", true, ""},
		{429, "40", "charge_card", "http_429", true, ""},
		{401, "", "lookup_order", "auth", false, ""},
		{401, "", "charge_card", "auth", false, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/%s", c.status, c.tool), func(t *testing.T) {
			w := newMCPWorld(t, c.tool)
			w.front.fail(c.status, c.retryAfter)
			const turns = 3
			for i := range turns {
				if i > 0 && c.retryAfter != "" {
					// The stated delay holds the dependency (checked below); let it pass.
					w.clk.Advance(41 * time.Second)
				}
				tr := turn(t, w.h)
				if tr.FinalText() != "done" {
					t.Fatalf("turn %d: final text %q, errors %v", i, tr.FinalText(), tr.Errs)
				}
				if got := w.front.calls.Load(); got != int64(i+1) {
					t.Fatalf("turn %d: %d tools/call POSTs reached the server, want one per call (not sent again); the model got %s", i, got, w.lastToolResult(t))
				}
				res := w.lastToolResult(t)
				if !strings.Contains(res, "agentbreaker.failed") {
					t.Errorf("turn %d: the model got %s, want agentbreaker's failed payload", i, res)
				}
				if strings.Contains(res, "outcome_unknown") || strings.Contains(res, "unknown") {
					t.Errorf("turn %d: the model got an outcome-unknown payload for a %d: %s", i, c.status, res)
				}
				if c.reason != "" && !strings.Contains(res, c.reason) {
					t.Errorf("turn %d: the payload %s does not say %q", i, res, c.reason)
				}
				if strings.Contains(res, "SECRET-FRONT") || strings.Contains(w.logs.String(), "SECRET-FRONT") {
					t.Errorf("turn %d: the front's body reached the model or the log", i)
				}
				if i == 0 && c.retryAfter != "" {
					// "with the Retry-After header as the delay (a floor on the cooldown,
					// held against the model's re-issues)": a re-issue within the delay
					// is answered locally, with the delay, and nothing is sent.
					tr := turn(t, w.h)
					if tr.FinalText() != "done" {
						t.Fatalf("re-issue: final text %q, errors %v", tr.FinalText(), tr.Errs)
					}
					if got := w.front.calls.Load(); got != 1 {
						t.Errorf("a re-issue within the stated delay reached the server: %d POSTs", got)
					}
					if res := w.lastToolResult(t); !strings.Contains(res, `"retry_after_seconds":40`) {
						t.Errorf("re-issue: the model got %s, want the stated 40 s", res)
					}
				}
			}
			if got := w.front.toolRuns.Load(); got != 0 {
				t.Errorf("%d calls reached the tools behind the front, want 0", got)
			}
			outs := w.outcomes()
			if len(outs) != turns {
				t.Fatalf("%d call outcome events, want %d", len(outs), turns)
			}
			for i, e := range outs {
				if e.Outcome.String() != "FAILED" || string(e.Class) != c.class || e.StatusCode != c.status {
					t.Errorf("outcome %d: %s %s status %d, want FAILED %s status %d", i, e.Outcome, e.Class, e.StatusCode, c.class, c.status)
				}
			}
			br, ok := w.deps.Get("shop")
			if !ok {
				t.Fatal("no breaker for shop")
			}
			snap := br.Snapshot()
			if !c.counts {
				if snap.State != breaker.Closed || snap.Window.Failures != 0 {
					t.Errorf("breaker %v with %d failures after %d x %d, want closed with none counted", snap.State, snap.Window.Failures, turns, c.status)
				}
				var faults int
				for _, line := range strings.Split(w.logs.String(), "\n") {
					if strings.Contains(line, "level=WARN") && strings.Contains(line, "config_fault") {
						faults++
					}
				}
				if faults != 1 {
					t.Errorf("%d config_fault WARN records, want one (logged once):\n%s", faults, w.logs.String())
				}
				return
			}
			if snap.State != breaker.Open {
				t.Fatalf("breaker %v after %d x %d (MinimumCalls 3), want open", snap.State, turns, c.status)
			}
			if c.retryAfter != "" {
				if ra := br.RetryAfter(); ra < 39*time.Second || ra > 41*time.Second {
					t.Errorf("breaker reopens in %v, want the Retry-After of 40s over the 30s cooldown", ra)
				}
			}
			// Open: the next call is answered locally, the server is not called.
			tr := turn(t, w.h)
			if tr.FinalText() != "done" {
				t.Fatalf("open turn: final text %q, errors %v", tr.FinalText(), tr.Errs)
			}
			if got := w.front.calls.Load(); got != turns {
				t.Errorf("the open breaker let a call through: %d POSTs", got)
			}
			if res := w.lastToolResult(t); !strings.Contains(res, "agentbreaker.unavailable") {
				t.Errorf("open turn: the model got %s, want agentbreaker.unavailable", res)
			}
		})
	}
}

// docs/mcp.md, "Listing goes through the breaker": "The guarded tool set never returns a
// listing error"; with no list ever seen the model gets "no tools" and the turn goes on;
// "admits | fails ... | the last list that worked. The failure counts against the
// dependency"; and "A listing answered so counts as the same class" (a 503: http_5xx).
func TestMCPGuardListingAnswered503(t *testing.T) {
	w := newMCPWorldSteps(t, breakertest.Text("done"))
	w.front.failAll(503)
	tr := turn(t, w.h)
	if tr.FinalText() != "done" {
		t.Fatalf("a 503 on listing ended the turn: final text %q, errors %v", tr.FinalText(), tr.Errs)
	}
	reqs := w.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model was called %d times, want 1", len(reqs))
	}
	for _, n := range reqs[0].ToolNames {
		if n == "lookup_order" || n == "charge_card" {
			t.Errorf("the model was offered %s although no listing ever worked", n)
		}
	}
	// "no tools, and one sentence in the system instruction: the dependency's tools are
	// unavailable right now, do not guess their results".
	if si := w.sys.instruction(0); !strings.Contains(si, "shop") || !strings.Contains(strings.ToLower(si), "unavailable") {
		t.Errorf("system instruction %q does not say shop's tools are unavailable", si)
	}
	if si := w.sys.instruction(0); strings.Contains(si, "SECRET-FRONT") {
		t.Errorf("the front's body reached the system instruction")
	}
	br, _ := w.deps.Get("shop")
	if br == nil || br.Snapshot().Window.Failures != 1 {
		t.Errorf("the failed listing was not counted once against shop: %+v", br.Snapshot())
	}
	if st := w.toolset.Stats(); st.ListFailures != 1 || st.Lists != 0 {
		t.Errorf("Stats %+v, want one failed listing and none that worked", st)
	}
	if !strings.Contains(w.logs.String(), "http_5xx") {
		t.Errorf("no log record names the listing's class http_5xx:\n%s", w.logs.String())
	}
	if strings.Contains(w.logs.String(), "SECRET-FRONT") {
		t.Errorf("the front's body reached the log")
	}

	// The server comes back: the tools are listed and offered.
	w.front.failAll(0)
	if tr := turn(t, w.h); tr.FinalText() != "done" {
		t.Fatalf("final text %q, errors %v", tr.FinalText(), tr.Errs)
	}
	if names := w.model.Requests()[1].ToolNames; !contains(names, "lookup_order") || !contains(names, "charge_card") {
		t.Errorf("after recovery the model was offered %v, want both tools", names)
	}

	// It fails again: the last list that worked is offered, and the failure counts.
	w.front.failAll(503)
	if tr := turn(t, w.h); tr.FinalText() != "done" {
		t.Fatalf("final text %q, errors %v", tr.FinalText(), tr.Errs)
	}
	if names := w.model.Requests()[2].ToolNames; !contains(names, "lookup_order") {
		t.Errorf("during the second outage the model was offered %v, want the last good list", names)
	}
	t.Logf("stats %+v, breaker %+v", w.toolset.Stats(), br.Snapshot())
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
