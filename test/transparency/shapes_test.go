package transparency_test

import (
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/agent/workflowagents/loopagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"
	"google.golang.org/adk/v2/tool/exitlooptool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/adk/v2/workflow"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// shapes are the hops docs/agents.md lists, each healthy, each wired as its page
// shows when guarded.
func shapes() []shape {
	return []shape{
		{name: "one tool", build: oneTool},
		{name: "three parallel calls", build: parallelCalls},
		{name: "a 404 business answer", build: notFoundAnswer},
		{name: "MCP tool set", build: mcpTools},
		{name: "streaming", build: oneTool, streaming: true},
		{name: "agent tool", build: agentTool},
		{name: "transfer to a local sub-agent", build: localTransfer},
		{name: "A2A by transfer, plain remote", build: a2aTransfer(false)},
		{name: "A2A by transfer, remote with Serve", build: a2aTransfer(true)},
		{name: "A2A by transfer, streaming", build: a2aTransfer(true), streaming: true},
		{name: "A2A as an agent tool", build: a2aAgentTool},
		{name: "workflow with tool and agent nodes", build: workflowNodes},
		{name: "confirmed RequireConfirmation tool", build: confirmed, next: confirm},
		{name: "long-running tool", build: longRunning, next: finishLongRunning},
		{name: "loop agent", build: loop},
	}
}

func llm(w *world, cfg llmagent.Config) agent.Agent {
	w.t.Helper()
	if cfg.Mode == llmagent.ModeUnset {
		cfg.Mode = llmagent.ModeChat
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// must panics on a construction error: the agents of a shape are the test's own.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func customer(n string) map[string]any { return map[string]any{"query": "customer " + n} }

// oneTool: the root calls crm_lookup and says what it returned.
func oneTool(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	m := w.model("root-model", toolThenEcho("root: ", fc("crm_lookup", customer("42"))))
	return llm(w, llmagent.Config{Name: "root", Model: m, Instruction: "Answer from the CRM.", Tools: []tool.Tool{lookup}})
}

// parallelCalls: three calls in one model response, two tools of one dependency.
func parallelCalls(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	orders := httpTool(w.t, w.dep, "crm_orders", "/orders", functiontool.Config{})
	m := w.model("root-model", toolThenEcho("root: ",
		fc("crm_lookup", customer("42")), fc("crm_lookup", customer("43")), fc("crm_orders", customer("42"))))
	return llm(w, llmagent.Config{Name: "root", Model: m, Instruction: "Answer from the CRM.", Tools: []tool.Tool{lookup, orders}})
}

// notFoundAnswer: the CRM answers 404 with words; the model reads them.
func notFoundAnswer(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	m := w.model("root-model", toolThenEcho("root: ", fc("crm_lookup", customer("7"))))
	return llm(w, llmagent.Config{Name: "root", Model: m, Instruction: "Answer from the CRM.", Tools: []tool.Tool{lookup}})
}

// agentTool: the root calls crm_agent as a tool; crm_agent calls crm_lookup. Guarded
// with guard.Build (docs/agents.md, "Sub-agents called as tools").
func agentTool(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	sub := llmagent.Config{Name: "crm_agent", Description: "Answers CRM questions.", Mode: llmagent.ModeChat,
		Model: w.model("crm-agent-model", toolThenEcho("crm_agent: ", fc("crm_lookup", customer("42")))), Tools: []tool.Tool{lookup}}
	root := llmagent.Config{Name: "root", Instruction: "Ask crm_agent.", Mode: llmagent.ModeChat,
		Model: w.model("root-model", toolThenEcho("root: ", fc("crm_agent", map[string]any{"request": "Who is customer 42?"})))}
	if w.guarded {
		return must(w.cb.Build(callbacks.Node{Config: root, AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{Config: sub}}}}))
	}
	root.Tools = []tool.Tool{agenttool.New(llm(w, sub), nil)}
	return llm(w, root)
}

// localTransfer: the root transfers to billing, which calls crm_lookup; later turns
// stay with billing. Guarded by the plugin alone (docs/agents.md, "Transfer").
func localTransfer(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	billing := llm(w, llmagent.Config{Name: "billing", Description: "Answers billing questions.",
		Model: w.model("billing-model", toolThenEcho("billing: ", fc("crm_lookup", customer("42")))), Tools: []tool.Tool{lookup}})
	return llm(w, llmagent.Config{Name: "root", Instruction: "Hand billing questions to billing.", SubAgents: []agent.Agent{billing},
		Model: w.model("root-model", toolThenEcho("root: ", fc("transfer_to_agent", map[string]any{"agent_name": "billing"})))})
}

// remote starts the remote billing service: an adka2a executor behind a2a-go's
// JSON-RPC handler on a local socket, whose agent calls crm_lookup. With serve (and
// w.guarded) it runs agentbreaker and a2aguard.Serve (docs/a2a.md, "One budget across
// the hop"); otherwise it is adk-go's alone. It returns the remote agent as the root
// reaches it: a2aguard.New when guarded, remoteagent.NewA2A otherwise.
func remote(w *world, serve bool) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	inner := llm(w, llmagent.Config{Name: "billing-agent", Instruction: "Answer billing questions.",
		Model: w.model("remote-model", toolThenEcho("remote: ", fc("crm_lookup", customer("42")))), Tools: []tool.Tool{lookup}})
	rc := runner.Config{AppName: "billing-service", Agent: inner, SessionService: session.InMemoryService()}
	ecfg := adka2a.ExecutorConfig{RunConfig: agent.RunConfig{StreamingMode: agent.StreamingModeSSE}}
	if w.guarded && serve {
		cb := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{Dependencies: dependencies})})
		rc.PluginConfig = runner.PluginConfig{Plugins: []*plugin.Plugin{cb.Plugin()}}
		ecfg.RunnerConfig = rc
		ecfg = a2aguard.Serve(cb, ecfg)
	} else {
		ecfg.RunnerConfig = rc
	}
	srv := w.serve("billing-service", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(adka2a.NewExecutor(ecfg))))
	card := &a2a.AgentCard{
		Name:                "billing-agent",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.srv.URL, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
	}
	acfg := remoteagent.A2AConfig{Name: "billing-agent", Description: "Answers billing questions.", AgentCard: card}
	if w.guarded {
		return must(a2aguard.New(a2aguard.Config{Dependency: "billing", Callbacks: w.cb, Agent: acfg}))
	}
	return must(remoteagent.NewA2A(acfg))
}

// a2aTransfer: the root transfers to the remote billing agent (docs/a2a.md, "The one
// line"); the next turn starts at the root again.
func a2aTransfer(serve bool) func(w *world) agent.Agent {
	return func(w *world) agent.Agent {
		return llm(w, llmagent.Config{Name: "root", Instruction: "Hand billing questions to billing-agent.", SubAgents: []agent.Agent{remote(w, serve)},
			Model: w.model("root-model", toolThenEcho("root: ", fc("transfer_to_agent", map[string]any{"agent_name": "billing-agent"})))})
	}
}

// a2aAgentTool: the root calls the remote billing agent as a tool, through the
// plugin's AgentTool, and the remote serves through a2aguard.Serve (docs/a2a.md, "One
// budget across the hop").
func a2aAgentTool(w *world) agent.Agent {
	rem := remote(w, true)
	var at tool.Tool
	if w.guarded {
		at = w.cb.AgentTool(rem, nil)
	} else {
		at = agenttool.New(rem, nil)
	}
	return llm(w, llmagent.Config{Name: "root", Instruction: "Ask billing-agent.", Tools: []tool.Tool{at},
		Model: w.model("root-model", toolThenEcho("root: ", fc("billing-agent", map[string]any{"request": "Is invoice 42 paid?"})))})
}

// workflowNodes: Start -> prep -> crm_lookup (a tool node) -> summary (an agent node
// whose agent calls crm_orders). Guarded: workflowguard.New for the tool node; agent
// nodes need nothing (docs/agents.md, "Workflow graphs").
func workflowNodes(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	orders := httpTool(w.t, w.dep, "crm_orders", "/orders", functiontool.Config{})
	prep := workflow.NewFunctionNode("prep", func(_ agent.Context, _ any) (map[string]any, error) {
		return customer("42"), nil
	}, workflow.NodeConfig{})
	var node workflow.Node
	if w.guarded {
		node = must(workflowguard.New(workflowguard.Config{Callbacks: w.cb, Tool: lookup}))
	} else {
		node = must(workflow.NewToolNode(lookup, workflow.NodeConfig{}))
	}
	summarizer := llm(w, llmagent.Config{Name: "summarizer", Mode: llmagent.ModeSingleTurn, Instruction: "Summarise the customer and their orders.", Tools: []tool.Tool{orders},
		Model: w.model("summarizer-model", toolThenEcho("summary: ", fc("crm_orders", customer("42"))))})
	summary := must(workflow.NewAgentNode(summarizer, workflow.NodeConfig{}))
	return must(workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: workflow.Chain(workflow.Start, prep, node, summary)}))
}

// confirmed: wire_money requires confirmation; the user confirms on the next turn.
func confirmed(w *world) agent.Agent {
	wire := httpTool(w.t, w.dep, "wire_money", "/payments", functiontool.Config{Description: "Sends money.", RequireConfirmation: true})
	return llm(w, llmagent.Config{Name: "root", Instruction: "Pay what the user asks.", Tools: []tool.Tool{wire},
		Model: w.model("root-model", toolThenEcho("root: ", fc("wire_money", map[string]any{"query": "10 EUR to ACME"})))})
}

// confirm answers adk-go's confirmation request of the turn before, if any.
func confirm(_ int, prev []*session.Event) *genai.Content {
	for _, ev := range prev {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if c := p.FunctionCall; c != nil && c.Name == toolconfirmation.FunctionCallName {
				return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
					ID: c.ID, Name: c.Name, Response: map[string]any{"confirmed": true}}}}}
			}
		}
	}
	return nil
}

// longRunning: open_ticket is a long-running tool; the user reports its end on the
// next turn.
func longRunning(w *world) agent.Agent {
	ticket := httpTool(w.t, w.dep, "open_ticket", "/tickets", functiontool.Config{Description: "Opens a support ticket.", IsLongRunning: true})
	return llm(w, llmagent.Config{Name: "root", Instruction: "Open tickets.", Tools: []tool.Tool{ticket},
		Model: w.model("root-model", toolThenEcho("root: ", fc("open_ticket", map[string]any{"query": "printer on fire"})))})
}

// finishLongRunning sends the final result of the long-running call of the turn
// before, if any.
func finishLongRunning(_ int, prev []*session.Event) *genai.Content {
	for _, ev := range prev {
		if ev.Content == nil || len(ev.LongRunningToolIDs) == 0 {
			continue
		}
		for _, p := range ev.Content.Parts {
			if c := p.FunctionCall; c != nil && c.ID == ev.LongRunningToolIDs[0] {
				return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
					ID: c.ID, Name: c.Name, Response: map[string]any{"status": "done", "ticket": "T-1"}}}}}
			}
		}
	}
	return nil
}

// loop: a loop agent whose worker calls crm_lookup, then exit_loop.
func loop(w *world) agent.Agent {
	lookup := httpTool(w.t, w.dep, "crm_lookup", "/customers", functiontool.Config{})
	exit := must(exitlooptool.New())
	worker := llm(w, llmagent.Config{Name: "worker", Instruction: "Look the customer up, then stop.", Tools: []tool.Tool{lookup, exit},
		Model: w.model("worker-model", func(req *model.LLMRequest) *genai.Content {
			rs := lastResponses(req)
			switch {
			case len(rs) == 0:
				return call(fc("crm_lookup", customer("42")))
			case rs[0].Name == "crm_lookup":
				return call(fc("exit_loop", map[string]any{}))
			}
			return echo("worker: ", rs)
		})})
	return must(loopagent.New(loopagent.Config{AgentConfig: agent.Config{Name: "loop", SubAgents: []agent.Agent{worker}}, MaxIterations: 3}))
}
