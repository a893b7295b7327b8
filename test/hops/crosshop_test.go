package hops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/agent/workflowagent"
	adkplugin "google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// What one hop does, every hop does (docs/operations.md, "Logs and traces";
// docs/operations-metrics.md; callbacks' Event): the same failing dependency, reached
// through a function tool, a sub-agent called as a tool (its own tool calls the
// dependency), a remote agent called as a tool, a remote agent reached by transfer and
// a workflow's tool node, gives the same Events (kind, outcome, class),
// the same metric counts, and log records with every key the page lists; a dead one
// (503) and one that states a delay (429 with Retry-After, which holds it).

const (
	crossDep     = "billing"
	crossTurns   = 8
	crossTrip    = 3 // the volume gate: the breaker opens on the third failure
	crossRemote  = "billing_agent"
	crossToolRef = "billing_lookup"
)

type crossHop struct {
	name  string
	build func(t *testing.T, cb *callbacks.Callbacks, deadURL string) (agent.Agent, error)
}

// crossResult is what one hop's run shows an operator, with IDs and times left out.
type crossResult struct {
	Events        []string // kind/outcome/class of each Event for the dependency
	Calls         float64  // agentbreaker_calls_total for the dependency
	ShortCircuits float64  // agentbreaker_short_circuits_total for the dependency
	Requests      int64    // what reached the dead server
	Shadowed      float64  // agentbreaker_shadow_refusals_total for the dependency
}

func TestSameRefusalsAndFailuresThroughEveryHop(t *testing.T) {
	hops := []crossHop{
		{"function tool", func(t *testing.T, cb *callbacks.Callbacks, url string) (agent.Agent, error) {
			root := breakertest.MustNewModel(breakertest.ModelConfig{Then: oneCallThenText(crossToolRef, map[string]any{"query": "invoice 7"})})
			return cb.Build(callbacks.Node{Config: llmagent.Config{Name: "assistant", Model: root, Tools: []tool.Tool{crmTool(t, crossToolRef, url)}}})
		}},
		{"sub-agent as a tool", func(t *testing.T, cb *callbacks.Callbacks, url string) (agent.Agent, error) {
			inner := breakertest.MustNewModel(breakertest.ModelConfig{Then: oneCallThenText(crossToolRef, map[string]any{"query": "invoice 7"})})
			root := breakertest.MustNewModel(breakertest.ModelConfig{Then: oneCallThenText("billing_desk", map[string]any{"request": "invoice 7"})})
			return cb.Build(callbacks.Node{Config: llmagent.Config{Name: "assistant", Model: root},
				AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{Config: llmagent.Config{Name: "billing_desk",
					Description: "Looks invoices up.", Model: inner, Tools: []tool.Tool{crmTool(t, crossToolRef, url)}}}}}})
		}},
		{"remote agent as a tool", func(t *testing.T, cb *callbacks.Callbacks, url string) (agent.Agent, error) {
			remote, err := deadRemote(cb, url)
			if err != nil {
				return nil, err
			}
			root := breakertest.MustNewModel(breakertest.ModelConfig{Then: oneCallThenText(crossRemote, map[string]any{"request": "invoice 7"})})
			return llmagent.New(llmagent.Config{Name: "assistant", Model: root, Mode: llmagent.ModeChat,
				Tools: []tool.Tool{cb.AgentTool(remote, nil)}})
		}},
		{"remote agent by transfer", func(t *testing.T, cb *callbacks.Callbacks, url string) (agent.Agent, error) {
			remote, err := deadRemote(cb, url)
			if err != nil {
				return nil, err
			}
			root := breakertest.MustNewModel(breakertest.ModelConfig{Then: oneCallThenText("transfer_to_agent", map[string]any{"agent_name": crossRemote})})
			return llmagent.New(llmagent.Config{Name: "assistant", Model: root, Mode: llmagent.ModeChat, SubAgents: []agent.Agent{remote}})
		}},
		{"workflow tool node", func(t *testing.T, cb *callbacks.Callbacks, url string) (agent.Agent, error) {
			node, err := workflowguard.New(workflowguard.Config{Callbacks: cb, Tool: crmTool(t, crossToolRef, url)})
			if err != nil {
				return nil, err
			}
			prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
				return map[string]any{"query": "invoice 7"}, nil
			}, workflow.NodeConfig{})
			return workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, node)})
		}},
	}
	for _, sc := range crossScenarios {
		t.Run(sc.name, func(t *testing.T) { crossCompare(t, sc, hops) })
	}
}

// crossScenario is one way the dependency fails: every answer, and what the Events
// of a tool's calls are (the first hop's, which every other hop must match).
type crossScenario struct {
	name   string
	answer func(w http.ResponseWriter)
	sent   int // the calls that reach the server; the rest are answered locally
	// shadow puts the dependency in shadow mode: every call is sent, and the calls
	// the breaker would have refused are would_refuse Events, not short-circuits.
	shadow bool
}

var crossScenarios = []crossScenario{
	{"503 on every request", func(w http.ResponseWriter) {
		http.Error(w, "upstream connect error or disconnect/reset before headers", http.StatusServiceUnavailable)
	}, crossTrip, false},
	// A 429 with a stated delay: the first answer holds the dependency, and every
	// later call is answered locally until the delay passes (the clock stands still).
	{"429 with Retry-After", func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "120")
		http.Error(w, "quota exceeded for project 1234 (rate limit)", http.StatusTooManyRequests)
	}, 1, false},
	// The dead dependency again, in shadow mode: nothing is refused, and every hop
	// says the same of what would have been.
	{"503 in shadow mode", func(w http.ResponseWriter) {
		http.Error(w, "upstream connect error or disconnect/reset before headers", http.StatusServiceUnavailable)
	}, crossTurns, true},
}

func crossCompare(t *testing.T, sc crossScenario, hops []crossHop) {
	var results []crossResult
	for _, h := range hops {
		t.Run(h.name, func(t *testing.T) {
			r := runCrossHop(t, h, sc)
			results = append(results, r)
			require(t, r.Requests == int64(sc.sent), "%s: %d requests reached the server, want %d", h.name, r.Requests, sc.sent)
			require(t, r.Calls == float64(sc.sent), "%s: agentbreaker_calls_total{dependency=%q} = %v, want %d", h.name, crossDep, r.Calls, sc.sent)
			wantSC := crossTurns - sc.sent
			if sc.shadow {
				wantSC = 0
				require(t, r.Shadowed == float64(crossTurns-crossTrip), "%s: agentbreaker_shadow_refusals_total = %v, want %d", h.name, r.Shadowed, crossTurns-crossTrip)
			}
			require(t, r.ShortCircuits == float64(wantSC), "%s: agentbreaker_short_circuits_total{dependency=%q} = %v, want %d", h.name, crossDep, r.ShortCircuits, wantSC)
		})
	}
	if len(results) != len(hops) {
		return
	}
	for i := 1; i < len(results); i++ {
		a, b := strings.Join(results[0].Events, "\n"), strings.Join(results[i].Events, "\n")
		require(t, a == b, "the Events of %q differ from those of %q:\n%s\n---\n%s", hops[i].name, hops[0].name, b, a)
	}
}

func require(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// oneCallThenText calls name once per turn, then answers in words.
func oneCallThenText(name string, args map[string]any) func(breakertest.Request) breakertest.Step {
	return func(req breakertest.Request) breakertest.Step {
		if len(req.FunctionResponses()) > 0 {
			return breakertest.Text("Sorry, billing is not answering.")
		}
		return breakertest.Call(name, args)
	}
}

// deadRemote is a remote agent, guarded as the dependency, whose server answers every
// request with a 503.
func deadRemote(cb *callbacks.Callbacks, url string) (agent.Agent, error) {
	card := &a2a.AgentCard{Name: crossRemote, Capabilities: a2a.AgentCapabilities{Streaming: true},
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)}}
	return a2aguard.New(a2aguard.Config{Dependency: crossDep, Callbacks: cb,
		Agent: remoteagent.A2AConfig{Name: crossRemote, Description: "Answers billing questions.", AgentCard: card}})
}

func runCrossHop(t *testing.T, h crossHop, sc crossScenario) crossResult {
	t.Helper()
	var requests atomic.Int64
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		sc.answer(w)
	}))
	t.Cleanup(dead.Close)

	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	clk := newClock()
	policy := crmPolicy(crossTrip)
	policy.Shadow = sc.shadow
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, OnStateChange: []func(breaker.Event){tel.BreakerEvent},
		Dependencies: map[string]dependencymap.Dependency{crossDep: {Tools: []string{crossToolRef}, Policy: policy}}})
	tel.Watch(deps)
	var mu sync.Mutex
	var events []string
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, Observability: callbacks.Observability{
		Observer: tel, Logger: logger,
		OnEvent: func(e callbacks.Event) {
			if e.Dependency != crossDep {
				return
			}
			mu.Lock()
			events = append(events, fmt.Sprintf("%s/%s/%s", e.Kind, e.Outcome, e.Class))
			mu.Unlock()
		},
	}})
	root, err := h.build(t, cb, dead.URL)
	if err != nil {
		t.Fatal(err)
	}
	harness := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*adkplugin.Plugin{cb.Plugin()}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range crossTurns {
		runTurn(t, harness, ctx, "What do I owe?")
	}
	checkRecordKeys(t, h.name, logs.String(), sc.sent)
	mu.Lock()
	defer mu.Unlock()
	return crossResult{Events: events, Requests: requests.Load(), Shadowed: sumFamily(t, reg, "agentbreaker_shadow_refusals_total"),
		Calls: sumFamily(t, reg, "agentbreaker_calls_total"), ShortCircuits: sumFamily(t, reg, "agentbreaker_short_circuits_total")}
}

// checkRecordKeys requires, of every record about the dependency's calls, the keys
// docs/operations.md lists for every record (elapsed_ms for calls that were sent).
func checkRecordKeys(t *testing.T, hop, logs string, sent int) {
	t.Helper()
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["dependency"] != crossDep {
			continue
		}
		ev, _ := rec["event"].(string)
		if ev != "call_outcome" && ev != "short_circuit" {
			continue
		}
		kinds[ev]++
		want := []string{"request_id", "outcome", "error_class", "breaker_state", "policy_version"}
		if ev == "call_outcome" {
			want = append(want, "elapsed_ms", "status_code")
		}
		var missing []string
		for _, k := range want {
			if _, ok := rec[k]; !ok {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		require(t, len(missing) == 0, "%s: a %s record lacks %v: %s", hop, ev, missing, line)
	}
	require(t, kinds["call_outcome"] == sent && kinds["short_circuit"] == crossTurns-sent,
		"%s: records %v, want %d call_outcome and %d short_circuit", hop, kinds, sent, crossTurns-sent)
}

func sumFamily(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "dependency" && l.GetValue() == crossDep {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
