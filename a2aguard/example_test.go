package a2aguard_test

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// A root agent hands billing questions to a remote agent over A2A, by transfer. The
// remote is down: the first twenty requests fail (connection refused) and the user is
// told so in agentbreaker's words; then the breaker is open and the request is not
// sent at all.
func Example() {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + l.Addr().String()
	l.Close() // nobody listens there now
	card := &a2a.AgentCard{
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
	}

	cb := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{})})
	billing := a2aguard.MustNew(a2aguard.Config{
		Dependency: "billing",
		Callbacks:  cb,
		Agent:      remoteagent.A2AConfig{Name: "billing-agent", Description: "Answers billing questions.", AgentCard: card},
	})

	model := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": "billing-agent"})
	}})
	root, _ := llmagent.New(llmagent.Config{Name: "root", Model: model, SubAgents: []agent.Agent{billing}})
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	ctx := context.Background()
	sid, _ := h.NewSession(ctx)
	for i := 1; i <= 21; i++ {
		turn, _ := h.Run(ctx, sid, "Is invoice 42 paid?")
		if i == 1 || i == 21 {
			// The first sentence: the rest says when to try again (jittered) and
			// what to tell the user.
			fmt.Printf("turn %d: %s.\n", i, strings.SplitN(turn.FinalText(), ".", 2)[0])
		}
	}
	// Output:
	// turn 1: this request to billing failed: it is refusing connections.
	// turn 21: billing is temporarily unavailable: it is refusing connections.
}

// twoHops is the code of docs/a2a.md: one guarded remote agent, reached by transfer or
// as a tool.
func twoHops(cb *callbacks.Callbacks, card *a2a.AgentCard, llm model.LLM) (agent.Agent, agent.Agent, error) {
	billing, err := a2aguard.New(a2aguard.Config{
		Dependency: "billing",
		Callbacks:  cb, // the agentbreaker plugin registered with the runner
		Agent:      remoteagent.A2AConfig{Name: "billing-agent", AgentCard: card},
	})
	if err != nil {
		return nil, nil, err
	}
	// By transfer: the root hands the turn to the remote agent, whose answer the user reads.
	byTransfer, err := llmagent.New(llmagent.Config{Name: "root", Model: llm, SubAgents: []agent.Agent{billing}})
	if err != nil {
		return nil, nil, err
	}
	// As a tool: the root asks the remote agent and answers the user itself.
	asTool, err := llmagent.New(llmagent.Config{Name: "root", Model: llm, Tools: []tool.Tool{agenttool.New(billing, nil)}})
	return byTransfer, asTool, err
}

var _ = twoHops

// serveAndCall is docs/a2a.md's "one line on each side" for one budget across the
// hop: the remote service's executor, and the root's guarded remote agent called
// through the plugin's AgentTool.
func serveAndCall(cb, guard *callbacks.Callbacks, rc runner.Config, billing agent.Agent) (*adka2a.Executor, tool.Tool) {
	// The remote service: its executor, under the plugin its runner registers (cb).
	exec := adka2a.NewExecutor(a2aguard.Serve(cb, adka2a.ExecutorConfig{RunnerConfig: rc}))
	// The root: the guarded remote agent, called through the plugin's AgentTool.
	tool := guard.AgentTool(billing, nil)
	return exec, tool
}

var _ = serveAndCall
