package a2aguard_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
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
	"google.golang.org/adk/v2/tool/agenttool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

const (
	remoteName = "billing-agent"
	dep        = "billing"
	remoteText = "Invoice 42 was paid on 3 March."
)

// mode is how the remote agent's server behaves.
type mode int32

const (
	modeOK mode = iota
	mode503
	modeHang
)

// remote is a real A2A server on a local socket: adk-go's adka2a executor behind
// a2a-go's JSON-RPC handler, whose agent is a scripted llmagent. It counts the
// requests that reach it, whatever it answers.
type remote struct {
	srv        *httptest.Server
	requests   atomic.Int64
	mode       atomic.Int32
	retryAfter atomic.Int64 // seconds, sent with a 503 when > 0
	model      *breakertest.Model
}

func newRemote(t testing.TB, remoteModel func(breakertest.Request) breakertest.Step) *remote {
	t.Helper()
	r := &remote{}
	if remoteModel == nil {
		remoteModel = func(breakertest.Request) breakertest.Step { return breakertest.Text(remoteText) }
	}
	r.model = breakertest.MustNewModel(breakertest.ModelConfig{Then: remoteModel})
	inner, err := llmagent.New(llmagent.Config{Name: remoteName, Model: r.model, Instruction: "Answer billing questions.", Mode: llmagent.ModeChat})
	require.NoError(t, err)
	exec := adka2a.NewExecutor(adka2a.ExecutorConfig{
		RunnerConfig: runner.Config{AppName: remoteName, Agent: inner, SessionService: session.InMemoryService()},
		RunConfig:    agent.RunConfig{StreamingMode: agent.StreamingModeSSE},
	})
	h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		switch mode(r.mode.Load()) {
		case mode503:
			if s := r.retryAfter.Load(); s > 0 {
				w.Header().Set("Retry-After", itoa(s))
			}
			http.Error(w, "upstream billing database is down (host db-7.internal)", http.StatusServiceUnavailable)
			return
		case modeHang:
			// Read the request first: net/http notices a client that hangs up only
			// once the body is consumed.
			_, _ = io.Copy(io.Discard, req.Body)
			<-req.Context().Done() // until the client gives up
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (r *remote) set(m mode) { r.mode.Store(int32(m)) }

func cardFor(url string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:                remoteName,
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
	}
}

// deadURL is an address nobody listens on: connecting to it is refused.
func deadURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return url
}

// dialCounter counts the connections the a2a client tries to open: for a remote that
// is down nothing reaches a server, so the attempts are counted where they start.
type dialCounter struct{ n atomic.Int64 }

func (d *dialCounter) client() *http.Client {
	var dialer net.Dialer
	return &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d.n.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}}
}

// shape is how the root reaches the remote agent.
type shape string

const (
	transfer  shape = "transfer"
	agentTool shape = "agenttool"
)

// rig is a root agent that reaches the guarded remote agent by transfer or as an
// AgentTool, run by adk-go's real runner with the agentbreaker plugin and a fake
// clock.
type rig struct {
	t       testing.TB
	clock   *clock.Fake
	deps    *dependencymap.Map
	cb      *callbacks.Callbacks
	h       *breakertest.Harness
	session string
	turnTTL time.Duration
	dep     string
}

type rigConfig struct {
	shape      shape
	url        string
	httpClient *http.Client
	timeout    time.Duration
	turnTTL    time.Duration // whole-turn deadline; defaults to 10s
	mutating   bool
	streaming  bool   // run the root with SSE (a transfer then streams too)
	dependency string // defaults to dep
	reserve    float64
	unguarded  bool // plain remoteagent.NewA2A, for the baseline
}

func newRig(t testing.TB, rc rigConfig) *rig {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fake})
	ccfg := callbacks.Config{Dependencies: deps, Clock: fake}
	if rc.mutating {
		ccfg.SideEffects.MutatingTools = []string{remoteName}
	}
	cb := callbacks.MustNew(ccfg)
	if rc.dependency == "" {
		rc.dependency = dep
	}
	acfg := remoteagent.A2AConfig{Name: remoteName, Description: "Answers billing questions.", AgentCard: cardFor(rc.url)}
	var guarded agent.Agent
	var err error
	if rc.unguarded {
		if rc.httpClient != nil {
			acfg.ClientProvider = remoteagent.NewA2AClientProvider(a2aclient.NewFactory(a2aclient.WithJSONRPCTransport(rc.httpClient)))
		}
		guarded, err = remoteagent.NewA2A(acfg)
	} else {
		guarded, err = a2aguard.New(a2aguard.Config{
			Dependency: rc.dependency, Callbacks: cb, HTTPClient: rc.httpClient, Timeout: rc.timeout, TurnReserve: rc.reserve, Agent: acfg,
		})
	}
	require.NoError(t, err)
	var root agent.Agent
	switch rc.shape {
	case transfer:
		m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
			return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": remoteName})
		}})
		root, err = llmagent.New(llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{guarded}, Mode: llmagent.ModeChat})
	case agentTool:
		m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
			if resp := lastFunctionResponse(req); resp != nil {
				b, _ := json.Marshal(resp.Response)
				return breakertest.Text("root: " + string(b))
			}
			return breakertest.Call(remoteName, map[string]any{"request": "Is invoice 42 paid?"})
		}})
		root, err = llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{agenttool.New(guarded, nil)}, Mode: llmagent.ModeChat})
	}
	require.NoError(t, err)
	hc := breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}}
	if rc.streaming {
		hc.RunConfig = agent.RunConfig{StreamingMode: agent.StreamingModeSSE}
	}
	h := breakertest.MustNewHarness(hc)
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	if rc.turnTTL == 0 {
		rc.turnTTL = 10 * time.Second
	}
	return &rig{t: t, clock: fake, deps: deps, cb: cb, h: h, session: sid, turnTTL: rc.turnTTL, dep: rc.dependency}
}

func lastFunctionResponse(req breakertest.Request) *genai.FunctionResponse {
	if len(req.Contents) == 0 {
		return nil
	}
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p != nil && p.FunctionResponse != nil {
			return p.FunctionResponse
		}
	}
	return nil
}

// newSession opens another conversation with the same agents.
func (r *rig) newSession() string {
	r.t.Helper()
	sid, err := r.h.NewSession(context.Background())
	require.NoError(r.t, err)
	return sid
}

// turnIn runs one turn in the session sid.
func (r *rig) turnIn(sid string) (*breakertest.Turn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.turnTTL)
	defer cancel()
	return r.h.Run(ctx, sid, "Is invoice 42 paid?")
}

// turn runs one user turn under the whole-turn deadline and returns it.
func (r *rig) turn() *breakertest.Turn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.turnTTL)
	defer cancel()
	turn, err := r.h.Run(ctx, r.session, "Is invoice 42 paid?")
	require.NoError(r.t, err)
	return turn
}

func (r *rig) breaker() *breaker.Breaker {
	b, ok := r.deps.Get(r.dep)
	require.True(r.t, ok)
	return b
}

// transportWords are what a2a-go, net/http and Go's context write; none may reach the
// user or the model.
var transportWords = []string{
	"failed to send HTTP request", "unexpected HTTP status", "connection refused", "127.0.0.1",
	"deadline exceeded", "context canceled", "Post \"", "db-7.internal", "llm error response",
}

// answerOf returns the text the user gets from a turn (the last final text), and
// fails if any event carries transport text or an error message.
func answerOf(t *testing.T, turn *breakertest.Turn) string {
	t.Helper()
	for _, ev := range turn.Events {
		b, err := json.Marshal(struct {
			Content *genai.Content
			Err     string
			Code    string
		}{ev.Content, ev.ErrorMessage, ev.ErrorCode})
		require.NoError(t, err)
		s := string(b)
		for _, w := range transportWords {
			require.NotContains(t, s, w, "event of %s carries transport text", ev.Author)
		}
		require.Empty(t, ev.ErrorMessage, "event of %s has an error message", ev.Author)
	}
	text := turn.FinalText()
	require.NotEmpty(t, text, "the turn got no answer")
	return text
}
