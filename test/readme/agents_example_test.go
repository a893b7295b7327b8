package readme_test

// The Go blocks of docs/agents.md, compiled (TestReadmeGoBlocksAreCompiled finds
// them here). Edit them here first, then copy them into the page.

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

var _ = []any{agentsPageTree, agentsPageWorkflow}

// agentsPageTree is docs/agents.md's agent tree: function tools, an MCP tool set, a
// sub-agent called as a tool and one reached by transfer, all under one plugin.
func agentsPageTree(m model.LLM, crmLookup, crmUpdate tool.Tool) (agent.Agent, error) {
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"crm_lookup", "crm_update"}}, // the tools, never the agent tools that call them
	}})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps,
		SideEffects: callbacks.SideEffects{Retry: retry.MustNew(retry.Config{})}}) // one budget across hops
	payments, err := mcpguard.New(mcpguard.Config{Dependency: "payments", Callbacks: guard,
		Toolset: mcptoolset.Config{Endpoint: "http://payments.internal/mcp"}})
	if err != nil {
		return nil, err
	}
	return guard.Build(callbacks.Node{
		Config: llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{crmLookup}, Toolsets: []tool.Toolset{payments}},
		AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{ // called as a tool, in a nested runner
			Config: llmagent.Config{Name: "crm_agent", Description: "Answers CRM questions.", Model: m, Tools: []tool.Tool{crmLookup}},
		}}},
		SubAgents: []callbacks.Node{{ // reached by transfer_to_agent, in the same runner
			Config: llmagent.Config{Name: "billing", Description: "Changes customer records.", Model: m, Tools: []tool.Tool{crmUpdate}},
		}},
	})
}

// agentsPageWorkflow is docs/agents.md's workflow: a guarded tool node whose
// refusals take their own route.
func agentsPageWorkflow(guard *callbacks.Callbacks, crmLookup tool.Tool, prep, report, fromCache workflow.Node) (agent.Agent, error) {
	lookup, err := workflowguard.New(workflowguard.Config{
		Callbacks: guard, // the plugin registered with the runner
		Tool:      crmLookup,
		Node:      workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: 3}},
	})
	if err != nil {
		return nil, err
	}
	edges := append(workflow.Chain(workflow.Start, prep, lookup),
		workflow.Edge{From: lookup, To: fromCache, Route: workflowguard.Refused}, // not sent, or failed for good
		workflow.Edge{From: lookup, To: report, Route: workflow.Default})
	return workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: edges})
}
