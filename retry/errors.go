package retry

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker"
)

// ErrStopped is the sentinel every [*StopError] unwraps to: the orchestrator refused to
// make (another) attempt of a logical operation.
var ErrStopped = errors.New("retry: stopped")

// ErrTooManyOperations is returned by [Retrier.Track] when an invocation tracks more
// operations, or the Retrier more invocations, than its Config allows.
var ErrTooManyOperations = errors.New("retry: too many tracked operations")

// ErrTooManyDependencies is returned by [Budgets.For] when creating a budget would pass
// BudgetConfig.MaxDependencies.
var ErrTooManyDependencies = errors.New("retry: too many dependencies")

// StopError says why an operation made no further attempt. It unwraps to [ErrStopped]
// and to the error that caused the stop, if any (an *breaker.OpenError, a journal error).
type StopError struct {
	// Reason is why, one of the Reason constants.
	Reason Reason
	// Dependency is the operation's dependency key.
	Dependency string
	// Attempts counts the attempts that were sent.
	Attempts int
	// RetryAfter is how long the dependency or its breaker asked callers to wait, when known.
	RetryAfter time.Duration
	// Err is the underlying error, when there is one.
	Err error
}

func (e *StopError) Error() string {
	s := fmt.Sprintf("retry: %s: stopped after %d attempt(s): %s", e.Dependency, e.Attempts, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrStopped and the cause.
func (e *StopError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrStopped}
	}
	return []error{ErrStopped, e.Err}
}

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError
