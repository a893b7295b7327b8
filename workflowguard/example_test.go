package workflowguard_test

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// A tool node guarded in one line: once the CRM's breaker is open the call is not
// sent, and the graph takes the Refused route instead of failing the run.
func Example() {
	crm := breakertest.StartServer()
	defer crm.Close()
	crm.Set(breakertest.Status(http.StatusServiceUnavailable))
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"crm_lookup"}},
	}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	lookupTool, _ := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: crm.URL, TypedErrors: true})

	lookup := workflowguard.MustNew(workflowguard.Config{Callbacks: cb, Tool: lookupTool,
		Node: workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: 3}}})

	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "acme"}, nil
	}, workflow.NodeConfig{})
	report := workflow.NewFunctionNode("report", func(_ agent.Context, in map[string]any) (string, error) {
		return "report: " + fmt.Sprint(in["body"]), nil
	}, workflow.NodeConfig{})
	fallback := workflow.NewFunctionNode("fallback", func(_ agent.Context, in map[string]any) (string, error) {
		return fmt.Sprintf("fallback: %v (%v)", in["status"], in["dependency"]), nil
	}, workflow.NodeConfig{})
	edges := append(workflow.Chain(workflow.Start, prep, lookup),
		workflow.Edge{From: lookup, To: fallback, Route: workflowguard.Refused},
		workflow.Edge{From: lookup, To: report, Route: workflow.Default})
	pipeline, _ := workflowagent.New(workflowagent.Config{Name: "pipeline", Edges: edges})
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: pipeline, Plugins: []*plugin.Plugin{cb.Plugin()}})

	b, _ := deps.Get("crm")
	b.ForceOpen("maintenance")
	sid, _ := h.NewSession(context.Background())
	turn, err := h.Run(context.Background(), sid, "report on acme")
	fmt.Println(err, crm.Requests())
	for _, ev := range turn.Events {
		if s, ok := ev.Output.(string); ok {
			fmt.Println(s)
		}
	}
	// Output:
	// <nil> 0
	// fallback: unavailable (crm)
}
