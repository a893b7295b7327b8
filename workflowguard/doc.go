// Package workflowguard puts a tool used in an adk-go workflow graph (a
// workflow.ToolNode) behind agentbreaker, with one line:
//
//	lookup, err := workflowguard.New(workflowguard.Config{
//		Callbacks: cb, // the agentbreaker plugin registered with the runner
//		Tool:      crmLookup,
//		Node:      workflow.NodeConfig{RetryConfig: &workflow.RetryConfig{MaxAttempts: 5}},
//	})
//
// The returned node goes where workflow.NewToolNode's would. adk-go's tool node calls
// the tool's Run directly, so no plugin or agent callback sees the call (its agent
// nodes are guarded as usual: the plugin travels in their context). Through this node
// each call goes through the plugin's callbacks in the order adk-go's agents run them
// (before, dispatch marker, the tool, on-error, after), so it gets the same breaker,
// bulkhead, retry-budget, classification and payload rules as the same tool in an
// agent. Register the plugin (cb.Plugin()) with the runner that runs the workflow: its
// end-of-run callback frees the run's state.
//
// # What the graph sees
//
// A call the plugin refuses (open breaker, full bulkhead, spent retry budget, an
// UNKNOWN mutation) is not sent, and the node completes with agentbreaker's payload as
// its output, carrying a route: the payload's response_type (for example
// payloads.TypeUnavailable), so the graph can branch on it with [Refused] or a
// workflow.StringRoute. The scheduler never retries it, because it is a result, not an
// error.
//
// A call that reached the dependency and failed is an [*Error] while the node will be
// retried (its RetryConfig allows another attempt and [ShouldRetry] agrees), so
// adk-go's scheduler repeats it. When no retry will follow, the node completes with
// the failure payload (payloads.TypeFailed, or the outcome-unknown payload for a
// mutation) and its route, like a refusal; set Config.FailuresAsErrors to end the node
// with the *Error instead, as adk-go would. The tool's error text never reaches the
// graph's output: it stays inside the *Error (Unwrap), whose own message names only
// the tool, the dependency and the class.
//
// A business refusal (the dependency answered and declined: a declined card, "no
// such customer", an in-band failure naming no outage) is neither:
// it is the dependency's answer, the node's output on its default route, and the
// breaker records a success, as on every other hop (classify.Healthy).
//
// # Retries
//
// New installs [ShouldRetry] as the node's RetryConfig.ShouldRetry, in front of the
// predicate given there: a node retry is refused while the dependency's breaker
// refuses calls, after an UNKNOWN outcome of a tool in the plugin's MutatingTools, and
// when the call's operation may not make another attempt (with
// callbacks.Config.SideEffects.Retry: its attempts, deadline or the dependency's retry
// budget are spent). Each retry the scheduler makes is the next attempt of the same
// operation, so it is charged to the dependency's retry budget like a model's
// re-issue. adk-go waits between retries with a real time.AfterFunc: tests use a zero
// InitialDelay.
//
// A Node is safe for concurrent use; one node may run in many invocations at once.
package workflowguard
