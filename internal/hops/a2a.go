package hops

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/retry"
)

// a2aShape: the two sub-agents are remote agents, each served over A2A by its own
// server (adk-go's adka2a executor behind a2a-go's JSON-RPC handler on a local
// socket) and each calling crm_lookup; the root reaches them as AgentTools and
// re-issues each while it reports failure.
//
// There are two agentbreakers, as in a deployment: the remote service's, whose plugin
// its runner installs (ExecutorConfig.RunnerConfig.PluginConfig) and which holds the
// CRM's breaker and retry budget (the World's Deps, CB and Retrier: the figures'
// trips are the CRM breaker's there), and the root's, which guards each remote agent
// as a dependency of its own with a2aguard (remote_a, remote_b) and calls it through
// its plugin's AgentTool. Each remote task is an invocation of the remote's runner;
// the remote serves through a2aguard.Serve, so each request's operation scope (the
// root's invocation) crosses the wire and the remote tracks its calls under it: the
// root's re-issue is a retry there, and the remote's marked inner failure makes it one
// at the root too.
var a2aShape = Shape{Name: "A2A", Build: func(w *World) (*breakertest.Harness, error) {
	names := []string{"crm_agent_a", "crm_agent_b"}
	var rootCB *callbacks.Callbacks
	if w.Mode != None {
		deps, err := dependencymap.New(dependencymap.Config{Clock: w.Clock, Default: Policy})
		if err != nil {
			return nil, err
		}
		cc := callbacks.Config{Dependencies: deps, Clock: w.Clock}
		if w.Mode == Budget {
			if cc.SideEffects.Retry, err = retry.New(retry.Config{Clock: w.Clock, Sleeper: &retry.FakeSleeper{},
				Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: w.Clock}), Rand: func() float64 { return 0.5 }}); err != nil {
				return nil, err
			}
		}
		if rootCB, err = callbacks.New(cc); err != nil {
			return nil, err
		}
	}
	rootCfg := llmagent.Config{Name: "assistant", Model: rootModel(names, map[string]any{"request": "Look up Acme."}), Mode: llmagent.ModeChat}
	for i, n := range names {
		url, err := w.serveRemote(n)
		if err != nil {
			return nil, err
		}
		acfg := remoteagent.A2AConfig{Name: n, Description: "Asks the CRM.", AgentCard: &a2a.AgentCard{
			Name:                n,
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
			Capabilities:        a2a.AgentCapabilities{Streaming: true},
		}}
		var remote agent.Agent
		if rootCB == nil {
			remote, err = remoteagent.NewA2A(acfg)
		} else {
			remote, err = a2aguard.New(a2aguard.Config{Dependency: fmt.Sprintf("remote_%c", 'a'+i), Callbacks: rootCB, Agent: acfg})
		}
		if err != nil {
			return nil, err
		}
		if rootCB == nil {
			rootCfg.Tools = append(rootCfg.Tools, agenttool.New(remote, nil))
		} else {
			rootCfg.Tools = append(rootCfg.Tools, rootCB.AgentTool(remote, nil))
		}
	}
	root, err := llmagent.New(rootCfg)
	if err != nil {
		return nil, err
	}
	var plugins []*plugin.Plugin
	if rootCB != nil {
		plugins = []*plugin.Plugin{rootCB.Plugin()}
	}
	return breakertest.NewHarness(breakertest.HarnessConfig{Agent: root, Plugins: plugins})
}}

// serveRemote starts the A2A server of the remote agent name, whose model calls
// crm_lookup once (subModel), under the remote's own agentbreaker plugin (none in
// None), and returns its address. It counts each request that reaches it in w.Remote.
func (w *World) serveRemote(name string) (string, error) {
	lookup, err := w.LookupTool()
	if err != nil {
		return "", err
	}
	inner, err := llmagent.New(llmagent.Config{Name: name, Description: "Asks the CRM.", Model: subModel(), Tools: []tool.Tool{lookup}})
	if err != nil {
		return "", err
	}
	ecfg := adka2a.ExecutorConfig{
		RunnerConfig: runner.Config{AppName: name, Agent: inner, SessionService: session.InMemoryService(),
			PluginConfig: runner.PluginConfig{Plugins: w.Plugins()}},
		RunConfig: agent.RunConfig{StreamingMode: agent.StreamingModeSSE},
	}
	if w.CB != nil {
		ecfg = a2aguard.Serve(w.CB, ecfg) // the remote service's half of the hop
	}
	exec := adka2a.NewExecutor(ecfg)
	h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.Remote.Add(1)
		h.ServeHTTP(rw, r)
	}))
	w.OnClose(srv.Close)
	return srv.URL, nil
}
