package breakertest_test

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
)

// A real tool against a local dependency that fails on command, a scripted model and
// adk-go's runner: the test can assert exactly what reached the dependency and what
// the model was shown.
func Example() {
	server := breakertest.StartServer() // in a test: breakertest.NewServer(t)
	defer server.Close()
	server.Enqueue(breakertest.RetryAfter(503, 30))

	lookup, _ := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup", URL: server.URL})
	model := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("lookup", map[string]any{"query": "acme"}),
		{Func: func(r breakertest.Request) breakertest.Step {
			return breakertest.Text(fmt.Sprint("the lookup said ", r.FunctionResponses()[0].Response["status"]))
		}},
	}})
	root, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{lookup}})
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root})

	ctx := context.Background()
	sid, _ := h.NewSession(ctx)
	turn, _ := h.Run(ctx, sid, "Tell me about Acme.")
	fmt.Println(turn.FinalText())
	fmt.Println("requests that reached the server:", server.Requests())
	fmt.Println("description the model saw:", model.Requests()[0].Declarations[0].Description)
	// Output:
	// the lookup said error
	// requests that reached the server: 1
	// description the model saw: Looks up lookup.
}
