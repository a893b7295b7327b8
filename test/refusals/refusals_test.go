// Package refusals_test checks, from the outside and hop by hop, the refusal rule of
// issue 43: a business refusal (the dependency answered and declined: "no such
// customer", a declined card) is the dependency working. The breaker records it as a
// success (classify's Healthy verdict): it is in the window, never as a failure, and
// no number of refusals opens the breaker. The same rule holds on every hop the plugin
// guards: a function tool, an MCP tool, a remote agent over A2A and a workflow tool
// node, each run through adk-go's runner with a scripted model; the breaker is read
// through the dependency map (dependencymap.Map.Get, breaker.Breaker.Snapshot).
package refusals_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// refusals is how many business refusals each hop sends: past the policy's volume
// gate several times over, so that counted as failures they would open the breaker.
const refusals = 30

// policy opens the breaker at half of at least five calls failing, in a time window
// that the fake clock never leaves.
var policy = breaker.Policy{
	FailureRateThreshold: 0.5,
	MinimumCalls:         5,
	Window:               time.Minute,
	Cooldown:             30 * time.Second,
	CooldownMultiplier:   1,
	Jitter:               -1,
}

// refusalWords is what the dependency answers, in its own words.
const refusalWords = "No such customer: ACME-42 is not in the CRM."

// world is a dependency map (every dependency on policy) and the plugin, on a fake clock.
type world struct {
	deps *dependencymap.Map
	cb   *callbacks.Callbacks
}

func newWorld(t *testing.T, tools map[string][]string) *world {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	cfg := dependencymap.Config{Clock: clk, Default: policy, Dependencies: map[string]dependencymap.Dependency{}}
	for dep, ts := range tools {
		cfg.Dependencies[dep] = dependencymap.Dependency{Tools: ts, Policy: policy}
	}
	deps := dependencymap.MustNew(cfg)
	return &world{deps: deps, cb: callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk})}
}

// requireCountedHealthy asserts the rule on dep's breaker after n refusals: n calls in
// the window, none of them failures, and the breaker closed.
func (w *world) requireCountedHealthy(t *testing.T, dep string, n int) {
	t.Helper()
	b, ok := w.deps.Get(dep)
	require.True(t, ok, "no breaker %q", dep)
	s := b.Snapshot()
	require.Equal(t, breaker.Closed, s.State, "%d refusals must not open the breaker", n)
	require.EqualValues(t, n, s.Window.Calls, "each refusal is in the window as a call (the dependency working)")
	require.Zero(t, s.Window.Failures, "no refusal is a failure")
}

// run runs one turn in a new session of h.
func run(t *testing.T, h *breakertest.Harness, text string) *breakertest.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := h.Run(ctx, sid, text)
	require.NoError(t, err)
	return turn
}

// callOnce is a model that calls name once, then answers with what the call returned.
func callOnce(name string, args map[string]any) *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if frs := r.FunctionResponses(); len(frs) > 0 {
			b, _ := json.Marshal(frs[len(frs)-1].Response)
			return breakertest.Text("answer: " + string(b))
		}
		return breakertest.Call(name, args)
	}})
}

// lookupCustomer is a function tool whose CRM declines, in-band, as many real tools
// report a business refusal: {"success": false, "error": "no_such_customer", ...}.
func lookupCustomer(t *testing.T, calls *atomic.Int64) tool.Tool {
	t.Helper()
	type args struct {
		ID string `json:"id"`
	}
	tl, err := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Looks a customer up."},
		func(agent.Context, args) (map[string]any, error) {
			calls.Add(1)
			return map[string]any{"success": false, "error": "no_such_customer", "message": refusalWords}, nil
		})
	require.NoError(t, err)
	return tl
}

// TestFunctionToolRefusalCountsAsASuccess: the function tool hop.
func TestFunctionToolRefusalCountsAsASuccess(t *testing.T) {
	t.Parallel()
	w := newWorld(t, map[string][]string{"crm": {"lookup_customer"}})
	var calls atomic.Int64
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: callOnce("lookup_customer", map[string]any{"id": "ACME-42"}),
		Tools: []tool.Tool{lookupCustomer(t, &calls)}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{w.cb.Plugin()}})
	for i := range refusals {
		turn := run(t, h, "Who is ACME-42?")
		require.Contains(t, turn.FinalText(), "No such customer", "turn %d: the dependency's words reach the model", i+1)
	}
	require.EqualValues(t, refusals, calls.Load(), "every refusal was sent: the breaker never refused a call")
	w.requireCountedHealthy(t, "crm", refusals)
}

// TestMCPToolRefusalCountsAsASuccess: the MCP hop (mcpguard over streamable HTTP): the
// server's isError result names no outage, so it is the server's refusal.
func TestMCPToolRefusalCountsAsASuccess(t *testing.T) {
	t.Parallel()
	srv := mcptest.NewServer()
	hs := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Order, mcptest.IsError("order_not_found: "+refusalWords))
	w := newWorld(t, nil)
	ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: w.cb, Toolset: mcptoolset.Config{Endpoint: hs.URL()}})
	t.Cleanup(func() { _ = ts.Close() })
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: callOnce(mcptest.Order, map[string]any{"order_id": "o-42"}),
		Toolsets: []tool.Toolset{ts}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{w.cb.Plugin()}})
	for i := range refusals {
		turn := run(t, h, "Where is order o-42?")
		require.Contains(t, turn.FinalText(), "No such customer", "turn %d: the server's words reach the model", i+1)
	}
	require.Equal(t, refusals, hs.Requests(mcptest.Order), "every refusal was sent")
	w.requireCountedHealthy(t, "payments", refusals)
}

// TestA2ARemoteRefusalCountsAsASuccess: the A2A hop (a2aguard, reached by transfer and
// as an agent tool). The remote's task ends failed with its own words, which name no
// outage: docs/a2a.md's refusal row.
func TestA2ARemoteRefusalCountsAsASuccess(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"transfer", "agenttool"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			const remoteName, dep = "crm-agent", "crm-remote"
			url, requests := serveRefusingRemote(t, remoteName)
			w := newWorld(t, nil)
			guarded, err := a2aguard.New(a2aguard.Config{Dependency: dep, Callbacks: w.cb, Agent: remoteagent.A2AConfig{
				Name: remoteName, Description: "Answers CRM questions.",
				AgentCard: &a2a.AgentCard{Name: remoteName, Capabilities: a2a.AgentCapabilities{Streaming: true},
					SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)}},
			}})
			require.NoError(t, err)
			var root agent.Agent
			if shape == "transfer" {
				m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
					return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": remoteName})
				}})
				root, err = llmagent.New(llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{guarded}, Mode: llmagent.ModeChat})
			} else {
				root, err = llmagent.New(llmagent.Config{Name: "root", Model: callOnce(remoteName, map[string]any{"request": "Who is ACME-42?"}),
					Tools: []tool.Tool{w.cb.AgentTool(guarded, nil)}, Mode: llmagent.ModeChat})
			}
			require.NoError(t, err)
			h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{w.cb.Plugin()}})
			for i := range refusals {
				turn := run(t, h, "Who is ACME-42?")
				text := turn.FinalText()
				for _, ev := range turn.Events {
					if ev.Content != nil {
						for _, p := range ev.Content.Parts {
							if p != nil {
								text += p.Text
							}
						}
					}
				}
				require.Contains(t, text, "No such customer", "turn %d: the remote's words reach the user", i+1)
			}
			require.EqualValues(t, refusals, requests.Load(), "every refusal was sent")
			w.requireCountedHealthy(t, dep, refusals)
		})
	}
}

// serveRefusingRemote starts a real A2A server (adk-go's adka2a executor behind a2a-go's
// JSON-RPC handler) whose agent's model declines every request with an error of its
// own: adk-go ends such a task failed, with the model's words.
func serveRefusingRemote(t *testing.T, name string) (string, *atomic.Int64) {
	t.Helper()
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		return breakertest.Step{Response: &model.LLMResponse{ErrorCode: "NOT_FOUND_IN_CRM", ErrorMessage: refusalWords}}
	}})
	inner, err := llmagent.New(llmagent.Config{Name: name, Model: m, Instruction: "Answer CRM questions.", Mode: llmagent.ModeChat})
	require.NoError(t, err)
	exec := adka2a.NewExecutor(adka2a.ExecutorConfig{
		RunnerConfig: runner.Config{AppName: name, Agent: inner, SessionService: session.InMemoryService()},
		RunConfig:    agent.RunConfig{StreamingMode: agent.StreamingModeSSE},
	})
	h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec))
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &requests
}

// TestWorkflowNodeRefusalCountsAsASuccess: the workflow hop (workflowguard): a guarded
// tool node whose tool declines, run by a workflow agent through the runner.
func TestWorkflowNodeRefusalCountsAsASuccess(t *testing.T) {
	t.Parallel()
	w := newWorld(t, map[string][]string{"crm": {"lookup_customer"}})
	var calls atomic.Int64
	lookup, err := workflowguard.New(workflowguard.Config{Callbacks: w.cb, Tool: lookupCustomer(t, &calls),
		Node: workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: 3, InitialDelay: 0}}})
	require.NoError(t, err)
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"id": "ACME-42"}, nil
	}, workflow.NodeConfig{})
	var outputs []string // what the node after the guarded one was given, and on which route
	keep := func(route string) func(agent.Context, any) (map[string]any, error) {
		return func(_ agent.Context, in any) (map[string]any, error) {
			b, _ := json.Marshal(in)
			outputs = append(outputs, route+": "+string(b))
			return map[string]any{"done": true}, nil
		}
	}
	edges := append(workflow.Chain(workflow.Start, prep, lookup),
		workflow.Edge{From: lookup, To: workflow.NewFunctionNode("from_cache", keep("refused"), workflow.NodeConfig{}), Route: workflowguard.Refused},
		workflow.Edge{From: lookup, To: workflow.NewFunctionNode("report", keep("default"), workflow.NodeConfig{}), Route: workflow.Default})
	wf, err := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: edges})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: wf, Plugins: []*plugin.Plugin{w.cb.Plugin()}})
	for i := range refusals {
		turn := run(t, h, "look up ACME-42")
		require.Empty(t, turn.Errs, "run %d: a refusal is a result", i+1)
	}
	require.EqualValues(t, refusals, calls.Load(), "every refusal was sent once: the scheduler retried none")
	require.Len(t, outputs, refusals)
	last := outputs[len(outputs)-1]
	require.True(t, strings.HasPrefix(last, "default: ") && strings.Contains(last, "No such customer"),
		"the dependency's answer is the node's output, on the default route: %s", last)
	w.requireCountedHealthy(t, "crm", refusals)
}
