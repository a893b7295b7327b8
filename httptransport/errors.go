package httptransport

import (
	"errors"
	"fmt"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// ErrTimeout is wrapped by the error of a round trip that Config.Timeout ended.
var ErrTimeout = errors.New("httptransport: round trip timed out")

// Error is the error of a failed round trip. It carries the transport's
// classification, which knows more than the error alone: whether anything was written
// before the failure. It unwraps to the underlying error (a *breaker.OpenError, a
// *url.Error's cause, ErrTimeout and the context error).
type Error struct {
	// Dependency is the dependency key of the request's host; "" when unmapped.
	Dependency string
	// Classification is the round trip's outcome.
	Classification classify.Classification
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	dep := e.Dependency
	if dep == "" {
		dep = "unmapped host"
	}
	return fmt.Sprintf("httptransport: %s: %s (%s): %v", dep, e.Classification.Outcome, e.Classification.Class, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether a timeout ended the round trip, as net.Error does.
func (e *Error) Timeout() bool {
	c := e.Classification.Class
	return c == classify.ClassTimeout || c == classify.ClassConnectTimeout || errors.Is(e.Err, ErrTimeout)
}

// Temporary is false; it exists only so that Error satisfies net.Error.
func (e *Error) Temporary() bool { return false }

// bulkheadFull wraps a bulkhead's refusal so that it classifies as bulkhead_full.
type bulkheadFull struct {
	dependency string
	err        error
}

func (e *bulkheadFull) Error() string {
	return fmt.Sprintf("httptransport: bulkhead of %s is full: %v", e.dependency, e.err)
}
func (e *bulkheadFull) Unwrap() error           { return e.err }
func (e *bulkheadFull) RejectedLocally() string { return string(classify.ClassBulkheadFull) }

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError
