package a2aguard_test

import (
	"context"
	"fmt"
	"log/slog"
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
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/retry"
)

// The A2A hop under one retry budget (docs/side-effects.md): a root model that asks two
// remote agents, each on its own A2A server and each calling the CRM (503), and
// re-issues each up to three times while it answers that the lookup failed.

const couldNot = "I could not reach the CRM."

// serviceMode is how the remote service is run.
type serviceMode int

const (
	served        serviceMode = iota // its own agentbreaker, served through a2aguard.Serve
	bare                             // no agentbreaker at all
	pluginNoServe                    // its own agentbreaker, without a2aguard.Serve
)

type hopRig struct {
	crm     *breakertest.Server
	a2a     atomic.Int64 // requests at the A2A servers
	rootCB  *callbacks.Callbacks
	rootDep *dependencymap.Map
	h       *breakertest.Harness
	answers []string // what the remote agents answered, as the root model read it
}

func newRetrier(t testing.TB, c clock.Clock) *retry.Retrier {
	r, err := retry.New(retry.Config{Clock: c, Sleeper: &retry.FakeSleeper{},
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: c}), Rand: func() float64 { return 0.5 }})
	require.NoError(t, err)
	return r
}

// newHopRig builds the root and the remote service; after, when set, replaces the
// final status's agentbreaker metadata (a hostile remote).
func newHopRig(t *testing.T, sm serviceMode, after func(*a2a.TaskStatusUpdateEvent)) *hopRig {
	t.Helper()
	return newHopRigWith(t, hopOptions{mode: sm, after: after})
}

type hopOptions struct {
	mode     serviceMode
	after    func(*a2a.TaskStatusUpdateEvent)
	transfer bool         // the root transfers to crm_agent_a instead of calling the agents as tools
	logger   *slog.Logger // the root plugin's logger, which the guards' records go to
}

func newHopRigWith(t *testing.T, o hopOptions) *hopRig {
	t.Helper()
	sm, after := o.mode, o.after
	fake := clock.NewFake(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))
	r := &hopRig{crm: breakertest.StartServer()}
	t.Cleanup(r.crm.Close)
	r.crm.Set(breakertest.Status(http.StatusServiceUnavailable))

	var remoteCB *callbacks.Callbacks
	if sm != bare {
		deps := dependencymap.MustNew(dependencymap.Config{Clock: fake,
			Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup"}}}})
		remoteCB = callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fake,
			SideEffects: callbacks.SideEffects{Retry: newRetrier(t, fake)}})
	}
	lookup, err := functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Looks a customer up."},
		func(ctx agent.Context, _ struct {
			Customer string `json:"customer"`
		}) (map[string]any, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.crm.URL+"/customers/acme", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			if resp.StatusCode >= 400 {
				return nil, classify.StatusError(resp.StatusCode, 0, "")
			}
			return map[string]any{"tier": "gold"}, nil
		})
	require.NoError(t, err)

	r.rootDep = dependencymap.MustNew(dependencymap.Config{Clock: fake})
	r.rootCB = callbacks.MustNew(callbacks.Config{Dependencies: r.rootDep, Clock: fake,
		SideEffects: callbacks.SideEffects{Retry: newRetrier(t, fake)}, Observability: callbacks.Observability{Logger: o.logger}})
	names := []string{"crm_agent_a", "crm_agent_b"}
	var tools []tool.Tool
	var remotes []agent.Agent
	for i, n := range names {
		sub := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
			if rs := req.FunctionResponses(); len(rs) > 0 {
				if _, ok := rs[0].Response["tier"]; ok {
					return breakertest.Text("Acme is a gold customer.")
				}
				return breakertest.Text(couldNot)
			}
			return breakertest.Call("crm_lookup", map[string]any{"customer": "acme"})
		}})
		inner, err := llmagent.New(llmagent.Config{Name: n, Model: sub, Tools: []tool.Tool{lookup}, Mode: llmagent.ModeChat})
		require.NoError(t, err)
		var plugins []*plugin.Plugin
		if remoteCB != nil {
			plugins = []*plugin.Plugin{remoteCB.Plugin()}
		}
		ecfg := adka2a.ExecutorConfig{
			RunnerConfig: runner.Config{AppName: n, Agent: inner, SessionService: session.InMemoryService(),
				PluginConfig: runner.PluginConfig{Plugins: plugins}},
			RunConfig: agent.RunConfig{StreamingMode: agent.StreamingModeSSE},
		}
		if sm == served {
			ecfg = a2aguard.Serve(remoteCB, ecfg)
		}
		if after != nil {
			ecfg.AfterExecuteCallback = func(_ adka2a.ExecutorContext, final *a2a.TaskStatusUpdateEvent, _ error) error {
				after(final)
				return nil
			}
		}
		h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(adka2a.NewExecutor(ecfg)))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.a2a.Add(1)
			h.ServeHTTP(w, req)
		}))
		t.Cleanup(srv.Close)
		card := &a2a.AgentCard{Name: n, Capabilities: a2a.AgentCapabilities{Streaming: true},
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)}}
		remote, err := a2aguard.New(a2aguard.Config{Dependency: fmt.Sprintf("remote_%c", 'a'+i), Callbacks: r.rootCB,
			Agent: remoteagent.A2AConfig{Name: n, Description: "Asks the CRM.", AgentCard: card}})
		require.NoError(t, err)
		remotes = append(remotes, remote)
		tools = append(tools, r.rootCB.AgentTool(remote, nil))
	}
	root := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
		calls := map[string]int{}
		var lastName, lastText string
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					calls[p.FunctionCall.Name]++
				}
				if p.FunctionResponse != nil {
					lastName = p.FunctionResponse.Name
					lastText = fmt.Sprint(p.FunctionResponse.Response)
				}
			}
		}
		if lastName != "" && calls[lastName] < 3 && !strings.Contains(lastText, "gold") {
			r.answers = append(r.answers, lastText)
			return breakertest.Call(lastName, map[string]any{"request": "Look up Acme."})
		}
		if lastName != "" {
			r.answers = append(r.answers, lastText)
		}
		for _, n := range names {
			if calls[n] == 0 {
				return breakertest.Call(n, map[string]any{"request": "Look up Acme."})
			}
		}
		return breakertest.Text("Here is what I found on Acme.")
	}})
	rcfg := llmagent.Config{Name: "assistant", Model: root, Tools: tools, Mode: llmagent.ModeChat}
	if o.transfer {
		rcfg.Tools, rcfg.SubAgents = nil, remotes
		rcfg.Model = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
			return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": names[0]})
		}})
	}
	rootAgent, err := llmagent.New(rcfg)
	require.NoError(t, err)
	r.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: rootAgent, Plugins: []*plugin.Plugin{r.rootCB.Plugin()}})
	return r
}

// turn runs one user turn and returns the requests it sent to the CRM and to the A2A
// servers.
func (r *hopRig) turn(t *testing.T) (crm, a2aReqs int64) {
	t.Helper()
	c0, a0 := r.crm.Requests(), r.a2a.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sid, err := r.h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := r.h.Run(ctx, sid, "Look up Acme in the CRM.")
	require.NoError(t, err)
	require.NotEmpty(t, turn.FinalText(), "the turn got an answer")
	return r.crm.Requests() - c0, r.a2a.Load() - a0
}

func (r *hopRig) rootBreaker(t *testing.T, d string) *breaker.Breaker {
	b, ok := r.rootDep.Get(d)
	require.True(t, ok)
	return b
}

// Served through a2aguard.Serve, the remote tracks its calls under the root's
// operation, and marks its inner failure: the first turn sends one CRM request plus the
// remote budget's share, the root's re-issues after an inner refusal are not sent, and
// the remote's own words still reach the root model.
func TestHopOneBudgetAcrossA2A(t *testing.T) {
	r := newHopRig(t, served, nil)
	crm, reqs := r.turn(t)
	require.Equal(t, int64(2), crm, "CRM requests: the first attempt and the remote budget's share")
	require.Equal(t, int64(3), reqs, "A2A requests: one per remote agent and the root budget's share")
	requireWords(t, r.answers)
	for _, d := range []string{"remote_a", "remote_b"} {
		require.Equal(t, breaker.Closed, r.rootBreaker(t, d).State(), "an inner failure is the remote's breaker's to count")
	}
	// The next turn is a new operation: its first attempt goes, its retries wait
	// for the budget.
	crm, reqs = r.turn(t)
	require.LessOrEqual(t, crm, int64(2))
	require.LessOrEqual(t, reqs, int64(3))
}

// A remote without agentbreaker marks nothing: the root sees completed tasks, the
// model re-issues each remote agent three times, as before a2aguard knew of marks.
func TestHopRemoteWithoutAgentbreaker(t *testing.T) {
	for _, sm := range []serviceMode{bare, pluginNoServe} {
		t.Run(fmt.Sprint(sm), func(t *testing.T) {
			r := newHopRig(t, sm, nil)
			crm, reqs := r.turn(t)
			require.Equal(t, int64(6), reqs, "2 remote agents x 3 issues")
			if sm == bare {
				require.Equal(t, int64(6), crm, "one lookup per remote task")
			} else {
				require.Greater(t, crm, int64(2), "each remote task is new work at the remote")
			}
			requireWords(t, r.answers)
		})
	}
}

// Hostile or malformed marks from a remote: ignored, or at most a neutral failure.
// Over 21 turns (past the breaker's volume gate) the root's breakers never count one,
// nothing panics, and every turn answers.
func TestHopHostileMetadata(t *testing.T) {
	huge := strings.Repeat("x", 64<<10)
	cases := []struct {
		name   string
		meta   any
		marked bool // read as an inner failure
	}{
		{"not a map", "failed", false},
		{"inner not a map", map[string]any{"inner_failure": []any{1, 2}}, false},
		{"unknown outcome", map[string]any{"inner_failure": map[string]any{"outcome": "exploded", "error_class": "http_5xx"}}, false},
		{"outcome of the wrong type", map[string]any{"inner_failure": map[string]any{"outcome": 7}}, false},
		{"wrong types and huge values", map[string]any{"inner_failure": map[string]any{
			"outcome": "failed", "error_class": huge, "retryable": "yes", "dependency": 42}}, true},
		{"names the root's own dependency", map[string]any{"inner_failure": map[string]any{
			"outcome": "failed", "error_class": "breaker_open", "retryable": true, "dependency": "remote_a"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newHopRig(t, bare, func(final *a2a.TaskStatusUpdateEvent) {
				final.Metadata = map[string]any{a2aguard.MetadataKey: tc.meta}
			})
			for i := range 21 {
				_, reqs := r.turn(t)
				if tc.marked {
					require.Less(t, reqs, int64(6), "turn %d: a mark makes the re-issue a retry", i+1)
				} else {
					require.Equal(t, int64(6), reqs, "turn %d: an ignored mark changes nothing", i+1)
				}
			}
			for _, d := range []string{"remote_a", "remote_b"} {
				require.Equal(t, breaker.Closed, r.rootBreaker(t, d).State(), "no mark counts as a failure")
			}
			requireWords(t, r.answers)
		})
	}
}

// requireWords checks that each answer the root model read came from a remote agent in
// its own words, or is the root's agentbreaker refusal of a re-issue (not sent), and
// that the remote's words came at least once.
func requireWords(t *testing.T, answers []string) {
	t.Helper()
	words := 0
	for _, a := range answers {
		if strings.Contains(a, "response_type:agentbreaker.") {
			continue
		}
		require.Contains(t, a, couldNot, "the remote's own words reach the root model")
		words++
	}
	require.Positive(t, words)
}

// By transfer (a request without streaming, whose answer is the task): the mark is
// read from the task's metadata, the request is FAILED, and the user reads the remote's
// own words.
func TestHopTransferReadsTheMark(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := newHopRigWith(t, hopOptions{mode: served, transfer: true, logger: logger})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sid, err := r.h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := r.h.Run(ctx, sid, "Look up Acme in the CRM.")
	require.NoError(t, err)
	require.Contains(t, turn.FinalText(), couldNot, "the remote's own words reach the user")
	require.Contains(t, logs.String(), "outcome=FAILED error_class=http_5xx", "the request is FAILED, with the remote's inner class")
	require.Equal(t, int64(1), r.crm.Requests())
	require.Equal(t, breaker.Closed, r.rootBreaker(t, "remote_a").State())
}
