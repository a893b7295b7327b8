package workflowguard

import (
	"time"

	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
)

// Config configures one guarded tool node.
type Config struct {
	// Callbacks is the agentbreaker plugin registered with the runner that runs the
	// workflow; its dependency map decides the tool's dependency. Required.
	Callbacks *callbacks.Callbacks
	// Tool is the tool the node runs: any tool adk-go's tool node can run (a
	// functiontool, an MCP tool, a *tooltimeout.Tool). Required.
	Tool tool.Tool
	// Name names the node. Defaults to the tool's name.
	Name string
	// Node is the node's configuration, as for workflow.NewToolNode. Its
	// RetryConfig.ShouldRetry, when set, is asked after agentbreaker's rules allow a
	// retry ([ShouldRetry]). Defaults to the zero NodeConfig: no retries.
	Node workflow.NodeConfig
	// Timeout bounds each call of the tool (package tooltimeout): a call that runs
	// out of time counts as a timeout against the dependency. Defaults to 0: the tool
	// is used as it is (wrap it with tooltimeout yourself, or rely on
	// Node.Timeout, whose expiry cancels the call and counts as neutral).
	Timeout time.Duration
	// FailuresAsErrors ends the node with the [*Error] when a failed call will not be
	// retried, so the workflow run fails as it would without agentbreaker. Defaults to
	// false: the node completes with the failure payload and its route.
	FailuresAsErrors bool
}

func (c Config) validate() error {
	bad := func(field string, v any, problem string) error {
		return &agentbreaker.ConfigError{Package: "workflowguard", Field: field, Value: v, Problem: problem}
	}
	switch {
	case c.Callbacks == nil:
		return bad("Callbacks", "nil", "is required: the agentbreaker plugin registered with the runner")
	case c.Tool == nil:
		return bad("Tool", "nil", "is required")
	case c.Timeout < 0:
		return bad("Timeout", c.Timeout, "must not be negative")
	}
	if rc := c.Node.RetryConfig; rc != nil && rc.MaxAttempts < 0 {
		return bad("Node.RetryConfig.MaxAttempts", rc.MaxAttempts, "must not be negative")
	}
	return nil
}
