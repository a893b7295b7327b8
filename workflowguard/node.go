package workflowguard

import (
	"encoding/json"
	"fmt"
	"iter"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Node is a workflow tool node whose calls go through agentbreaker. It is a
// workflow.Node: use it wherever the *workflow.ToolNode would go.
type Node struct {
	*workflow.ToolNode
}

// New returns the guarded tool node, or an error naming the invalid field.
func New(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	inner := cfg.Tool
	if cfg.Timeout > 0 {
		w, err := tooltimeout.Wrap(inner, tooltimeout.Config{Timeout: cfg.Timeout})
		if err != nil {
			return nil, fmt.Errorf("workflowguard: Config.Timeout: %w", err)
		}
		inner = w
	}
	run, ok := inner.(runnable)
	if !ok {
		return nil, &ConfigError{Package: "workflowguard", Field: "Tool", Value: fmt.Sprintf("%T", cfg.Tool),
			Problem: "has no Run(agent.Context, any) method, so a workflow tool node cannot run it"}
	}
	nc := cfg.Node
	g := &guarded{cb: cfg.Callbacks, decl: cfg.Tool, inner: run, asErrors: cfg.FailuresAsErrors}
	if rc := nc.RetryConfig; rc != nil {
		c := *rc // the caller's RetryConfig is left as it was
		c.ShouldRetry = ShouldRetry(rc.ShouldRetry)
		nc.RetryConfig = &c
		g.retry = &c
		g.next = rc.ShouldRetry
	}
	g.counts.init()
	tn, err := workflow.NewNamedToolNode(cfg.Name, g, nc)
	if err != nil {
		return nil, fmt.Errorf("workflowguard: %w", err)
	}
	return &Node{ToolNode: tn}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Node {
	n, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return n
}

// Run runs the tool node and tags an agentbreaker payload in its output with the
// payload's response_type as the event's route, so the graph can branch on it.
func (n *Node) Run(ctx agent.Context, input any) iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		for ev, err := range n.ToolNode.Run(ctx, input) {
			if ev != nil && ev.Routes == nil {
				if m, ok := ev.Output.(map[string]any); ok && payloads.Is(m) {
					if rt, _ := m[payloads.KeyResponseType].(string); rt != "" {
						ev.Routes = []string{rt}
					}
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Refused is a route that matches any node output that is an agentbreaker payload: a
// call refused before it was sent, or a failure that will not be retried.
var Refused workflow.Route = refusedRoute{}

type refusedRoute struct{}

func (refusedRoute) Matches(ev *session.Event) bool {
	for _, r := range ev.Routes {
		if len(r) > len(prefix) && r[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

const prefix = "agentbreaker."

// argsOf gives the callbacks the map they key operations and payloads by. A tool node
// passes its validated input, which for a tool with an object schema is a map already.
func argsOf(input any) map[string]any {
	switch v := input.(type) {
	case map[string]any:
		return v
	case nil:
		return map[string]any{}
	}
	b, err := json.Marshal(input)
	if err != nil {
		return map[string]any{"input": fmt.Sprintf("%T", input)}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil && m != nil {
		return m
	}
	return map[string]any{"input": json.RawMessage(b)}
}
