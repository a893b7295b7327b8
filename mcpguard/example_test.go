package mcpguard_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// An MCP server's tools guarded as the dependency "payments" in one line. The server
// runs in the process, over the SDK's in-memory transport; it declines the card, and
// the model reads why.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	type chargeArgs struct {
		Card string `json:"card"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "charge_card", Description: "Charges a card."},
		func(context.Context, *mcp.CallToolRequest, chargeArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "card_declined: The card was declined."}}}, nil, nil
		})
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		panic(err)
	}

	deps := dependencymap.MustNew(dependencymap.Config{})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}})
	tools := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: guard, Toolset: mcptoolset.Config{Transport: clientT}})
	defer func() { tools.Close(); ss.Wait() }()

	model := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("charge_card", map[string]any{"card": "0002"}),
		{Func: func(r breakertest.Request) breakertest.Step {
			if e, _ := r.FunctionResponses()[0].Response["error"].(string); strings.Contains(e, "declined") {
				return breakertest.Text("Your card was declined.")
			}
			return breakertest.Text("Something went wrong.")
		}},
	}})
	a := must(llmagent.New(llmagent.Config{Name: "cashier", Model: model, Toolsets: []tool.Toolset{tools}}))
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
	sid := must(h.NewSession(ctx))
	turn := must(h.Run(ctx, sid, "Pay with my card ending 0002."))

	b, _ := deps.Get("payments")
	fmt.Println("tools under payments:", deps.Tools("payments"))
	fmt.Println("model:", turn.FinalText())
	fmt.Println("breaker:", b.State())
	// Output:
	// tools under payments: [charge_card]
	// model: Your card was declined.
	// breaker: closed
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
