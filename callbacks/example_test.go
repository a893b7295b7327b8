package callbacks_test

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// Register the plugin first; every tool call of every agent the runner runs is then
// guarded by its dependency's breaker. Here the CRM's breaker is open, so the model
// gets the unavailable payload instead of a call to the CRM.
func Example() {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}},
		},
	})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})

	lookup, _ := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Finds a customer."},
		func(agent.Context, struct{ ID string }) (map[string]any, error) {
			return map[string]any{"name": "Ada"}, nil
		})
	model := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("lookup_customer", map[string]any{"ID": "42"}),
		breakertest.Text("The customer system is down; I'll continue without it."),
	}})
	root, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{lookup}})
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{
		Agent:   root,
		Plugins: []*plugin.Plugin{cb.Plugin() /* first */},
	})

	crm, _ := deps.Get("crm")
	crm.ForceOpen("maintenance")

	ctx := context.Background()
	sid, _ := h.NewSession(ctx)
	turn, _ := h.Run(ctx, sid, "Who is customer 42?")
	p := turn.FunctionResponses()[0].Response
	fmt.Println(p["response_type"], p["status"], p["dependency"], p["retry_advised"])
	fmt.Println(p["reason"])
	fmt.Println(turn.FinalText())
	// Output:
	// agentbreaker.unavailable unavailable crm false
	// crm is temporarily unavailable: it is not accepting requests right now.
	// The customer system is down; I'll continue without it.
}

// refusals is an Observer that prints each short-circuit; embedding observe.Nop
// supplies the methods it ignores. In production the Observer is a
// *telemetry.Telemetry, which turns these reports into metrics, logs and span events.
type refusals struct{ observe.Nop }

func (refusals) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	// s.RequestID is the invocation ID; the context is the call's tool context.
	call := ctx.(interface{ FunctionCallID() string }).FunctionCallID()
	fmt.Printf("short-circuit: %s/%s (%s), breaker %s\n", s.Dependency, s.Tool, call, s.State)
}

// Config.Observability.Observer hears of every short-circuit, bulkhead rejection and call outcome,
// with the call's tool context.
func Example_observer() {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: refusals{}}})
	lookup, _ := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Finds a customer."},
		func(agent.Context, struct{ ID string }) (map[string]any, error) {
			return map[string]any{"name": "Ada"}, nil
		})
	model := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Calls(&genai.FunctionCall{ID: "call-1", Name: "lookup_customer", Args: map[string]any{"ID": "42"}}),
		breakertest.Text("The customer system is down."),
	}})
	root, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{lookup}})
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})

	crm, _ := deps.Get("crm")
	crm.ForceOpen("maintenance")
	ctx := context.Background()
	sid, _ := h.NewSession(ctx)
	_, _ = h.Run(ctx, sid, "Who is customer 42?")
	// Output:
	// short-circuit: crm/lookup_customer (call-1), breaker forced_open
}
