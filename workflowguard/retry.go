package workflowguard

import (
	"errors"
	"fmt"

	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Error is a guarded tool node's failure: the call reached its tool (or may have) and
// failed. Its message names the tool, the dependency and the failure's class, never
// the tool's own error text, which Unwrap returns for the program (not the graph's
// output, the logs or a model).
type Error struct {
	// Tool is the tool's name; Dependency the dependency it is listed under (or the
	// tool's name when it has a breaker of its own).
	Tool, Dependency string
	// Class is the failure's class as agentbreaker's payload states it (timeout,
	// server_error, …); "" when the plugin gave no payload.
	Class string
	// Payload is agentbreaker's answer for the call: what an agent's model would have
	// seen, and the node's output when it is not retried.
	Payload map[string]any
	// Err is the tool's error.
	Err error

	invocation      string
	args            map[string]any
	cb              *callbacks.Callbacks
	unknownMutation bool
	// decided is set by a node built with New: it asked the rules when the call
	// failed, and retry is its answer. The scheduler's ShouldRetry returns the same, so
	// the node and the scheduler cannot disagree when another run trips the breaker in
	// between (a retry that finds the breaker open is answered with a payload).
	decided, retry bool
}

func (e *Error) Error() string {
	class := e.Class
	if class == "" {
		class = "unclassified"
	}
	return fmt.Sprintf("workflowguard: tool %q of dependency %q failed (%s)", e.Tool, e.Dependency, class)
}

// Unwrap returns the tool's error.
func (e *Error) Unwrap() error { return e.Err }

// RetryRefused returns why a retry of the failed call would be refused now, or "" when
// it may go. It is asked afresh on each call, so it follows the breaker as it is now;
// [ShouldRetry] instead keeps the answer it gave when a node built with [New] failed
// (see there), so the two may disagree once another run has moved the breaker. The
// reasons: retry.ReasonBreakerOpen while the dependency's breaker refuses calls or
// when a breaker below the tool refused this call (class breaker_open),
// retry.ReasonUnknownOutcome after an UNKNOWN outcome of a mutation, and the reason
// the call's operation gives when its attempts, deadline or retry budget are spent
// (callbacks.Callbacks.RetryRefused). It charges nothing.
func (e *Error) RetryRefused() retry.Reason {
	if e.unknownMutation {
		return retry.ReasonUnknownOutcome
	}
	if e.Class == string(classify.ClassBreakerOpen) {
		// A breaker below the tool refused the call (an httptransport client's): the
		// tool's own breaker does not know, and a retry now would be refused again.
		return retry.ReasonBreakerOpen
	}
	if e.cb == nil {
		return ""
	}
	return e.cb.RetryRefused(e.invocation, e.Tool, e.args)
}

// ShouldRetry returns a predicate for workflow.RetryConfig.ShouldRetry: an [*Error]
// is retried only when [Error.RetryRefused] says nothing against it, and then, like
// every other error, when next agrees (nil next: adk-go's default, which retries
// everything but workflow.ErrInputValidation). New installs it on its node; use it
// for a node of your own that returns an *Error. A node built with New asks it when
// the call fails (to know whether to return the *Error or the payload), and the
// *Error carries that answer, which later calls return: the node and the scheduler
// agree even when another run trips the breaker in between.
func ShouldRetry(next func(error) bool) func(error) bool {
	return func(err error) bool {
		e, ok := errors.AsType[*Error](err)
		if ok && e.decided {
			return e.retry // the node asked these rules, and next, when the call failed
		}
		if ok && e.RetryRefused() != "" {
			return false
		}
		if next != nil {
			return next(err)
		}
		return !errors.Is(err, workflow.ErrInputValidation)
	}
}
