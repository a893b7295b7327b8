package workflowguard_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// benchInvocation is the little of an invocation that a tool node reads.
type benchInvocation struct {
	agent.InvocationContext
	context.Context
}

func (benchInvocation) InvocationID() string          { return "bench-invocation" }
func (benchInvocation) Artifacts() agent.Artifacts    { return nil }
func (b benchInvocation) Deadline() (time.Time, bool) { return b.Context.Deadline() }
func (b benchInvocation) Done() <-chan struct{}       { return b.Context.Done() }
func (b benchInvocation) Err() error                  { return b.Context.Err() }
func (b benchInvocation) Value(k any) any             { return b.Context.Value(k) }

// BenchmarkToolNodeRun is one activation of a tool node with a closed breaker: adk-go's
// node against the guarded one. Record on a quiet machine with
//
//	go test -run '^$' -bench BenchmarkToolNodeRun -benchmem -count 10 ./workflowguard/
func BenchmarkToolNodeRun(b *testing.B) {
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks up."},
		func(agent.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok"}, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	plain, err := workflow.NewToolNode(lookup, workflow.NodeConfig{})
	if err != nil {
		b.Fatal(err)
	}
	guarded := workflowguard.MustNew(workflowguard.Config{Callbacks: cb, Tool: lookup})
	ctx := agent.NewToolContext(benchInvocation{Context: context.Background()}, "call", &session.EventActions{}, nil)
	input := map[string]any{"i": 1}
	for _, n := range []struct {
		name string
		node workflow.Node
	}{{"adk-go", plain}, {"workflowguard", guarded}} {
		b.Run(n.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, err := range n.node.Run(ctx, input) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	if s := cb.Stats(); s.InFlight != 0 {
		b.Fatalf("left in flight: %+v", s)
	}
}
