package hops

import (
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// issues is how often the caller above the two callers tries: the root model's first
// call and two re-issues, or a workflow node's first attempt and two retries.
const issues = 3

var lookupArgs = map[string]any{"customer": "acme"}

// failed says whether a function response reports that the lookup did not work: an
// error, an agentbreaker payload, or a sub-agent saying so.
func failed(resp map[string]any) bool {
	if _, ok := resp["error"]; ok {
		return true
	}
	if _, ok := resp["response_type"]; ok {
		return true
	}
	s, _ := resp["result"].(string)
	return strings.Contains(s, "could not")
}

// rootModel calls each of callers in turn and calls a caller again, up to issues
// times, while its answer says the lookup failed; then it answers.
func rootModel(callers []string, args map[string]any) *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: true, Then: func(r breakertest.Request) breakertest.Step {
		calls := map[string]int{}
		var lastName string
		var lastResp map[string]any
		for _, c := range r.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					calls[p.FunctionCall.Name]++
				}
				if p.FunctionResponse != nil {
					lastName, lastResp = p.FunctionResponse.Name, p.FunctionResponse.Response
				}
			}
		}
		if lastName != "" && failed(lastResp) && calls[lastName] < issues {
			return breakertest.Call(lastName, args) // the model tries again
		}
		for _, name := range callers {
			if calls[name] == 0 {
				return breakertest.Call(name, args)
			}
		}
		return breakertest.Text("Here is what I found on Acme.")
	}})
}

// toolsShape: the root model calls two tools of the CRM (crm_lookup and
// crm_lookup_contacts, one client each) and re-issues each failed one.
var toolsShape = Shape{Name: "plain tools", Build: func(w *World) (*breakertest.Harness, error) {
	lookup, err := w.LookupTool()
	if err != nil {
		return nil, err
	}
	second, err := w.LookupToolNamed("crm_lookup_contacts")
	if err != nil {
		return nil, err
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: rootModel([]string{"crm_lookup", "crm_lookup_contacts"}, lookupArgs),
		Tools: []tool.Tool{lookup, second}, Mode: llmagent.ModeChat})
	if err != nil {
		return nil, err
	}
	return breakertest.NewHarness(breakertest.HarnessConfig{Agent: root, Plugins: w.Plugins()})
}}

// subModel calls crm_lookup once and says what it got.
func subModel() *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: true, Then: func(r breakertest.Request) breakertest.Step {
		if rs := r.FunctionResponses(); len(rs) > 0 {
			if failed(rs[0].Response) {
				return breakertest.Text("I could not reach the CRM.")
			}
			return breakertest.Text("Acme is a gold customer.")
		}
		return breakertest.Call("crm_lookup", lookupArgs)
	}})
}

// agentToolShape: two sub-agents, each run as a tool, each calling crm_lookup; the root
// model re-issues each while it reports failure.
var agentToolShape = Shape{Name: "AgentTool", Build: func(w *World) (*breakertest.Harness, error) {
	lookup, err := w.LookupTool()
	if err != nil {
		return nil, err
	}
	names := []string{"crm_agent_a", "crm_agent_b"}
	rootCfg := llmagent.Config{Name: "assistant", Model: rootModel(names, map[string]any{"request": "Look up Acme."}), Mode: llmagent.ModeChat}
	var root agent.Agent
	if w.CB == nil {
		for _, n := range names {
			sub, err := llmagent.New(llmagent.Config{Name: n, Description: "Asks the CRM.", Model: subModel(), Tools: []tool.Tool{lookup}})
			if err != nil {
				return nil, err
			}
			rootCfg.Tools = append(rootCfg.Tools, agenttool.New(sub, nil))
		}
		root, err = llmagent.New(rootCfg)
	} else {
		node := callbacks.Node{Config: rootCfg}
		for _, n := range names {
			node.AgentTools = append(node.AgentTools, callbacks.AgentToolNode{Node: callbacks.Node{
				Config: llmagent.Config{Name: n, Description: "Asks the CRM.", Model: subModel(), Tools: []tool.Tool{lookup}},
			}})
		}
		root, err = w.CB.Build(node)
	}
	if err != nil {
		return nil, err
	}
	return breakertest.NewHarness(breakertest.HarnessConfig{Agent: root, Plugins: w.Plugins()})
}}

// workflowShape: START -> prep -> lookup_a -> prep -> lookup_b -> report, each lookup
// a tool node retried by adk-go's scheduler (three attempts, no delay).
var workflowShape = Shape{Name: "workflow", Build: func(w *World) (*breakertest.Harness, error) {
	lookup, err := w.LookupTool()
	if err != nil {
		return nil, err
	}
	node := func(name string) (workflow.Node, error) {
		nc := workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: issues}}
		if w.CB == nil {
			return workflow.NewNamedToolNode(name, lookup, nc)
		}
		return workflowguard.New(workflowguard.Config{Callbacks: w.CB, Tool: lookup, Name: name, Node: nc})
	}
	a, err := node("lookup_a")
	if err != nil {
		return nil, err
	}
	b, err := node("lookup_b")
	if err != nil {
		return nil, err
	}
	prep := func(name string) workflow.Node {
		return workflow.NewFunctionNode(name, func(agent.Context, any) (map[string]any, error) { return lookupArgs, nil }, workflow.NodeConfig{})
	}
	report := workflow.NewFunctionNode("report", func(agent.Context, any) (string, error) { return "report written", nil }, workflow.NodeConfig{})
	root, err := workflowagent.New(workflowagent.Config{Name: "pipeline",
		Edges: workflow.Chain(workflow.Start, prep("prep_a"), a, prep("prep_b"), b, report)})
	if err != nil {
		return nil, err
	}
	return breakertest.NewHarness(breakertest.HarnessConfig{Agent: root, Plugins: w.Plugins()})
}}
