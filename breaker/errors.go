package breaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker"
)

// ErrOpen is the sentinel every rejection unwraps to: the breaker is open, forced open,
// or half-open with its probes already out.
var ErrOpen = errors.New("breaker: open")

// OpenError is returned by Allow when a call is rejected. It unwraps to [ErrOpen].
//
// One OpenError is shared by every rejection of the same open period (that is what keeps
// rejection free of allocations), so it records the instant the next probe may go rather
// than a duration; [OpenError.RetryAfter] turns that into a wait on the breaker's clock.
type OpenError struct {
	// Breaker is the name of the breaker (the dependency key).
	Breaker string
	// State is the state that rejected the call: open, half_open or forced_open.
	State State
	// Until is when the next probe may go. Zero when nobody knows: a forced-open breaker
	// waits for an operator.
	Until time.Time
	// WaitsForProbe is set when the call was refused only because it may not be the
	// probe (AllowNoProbe, or any user call once a prober is attached): the breaker's
	// open period is over and it waits for a probe to decide.
	WaitsForProbe bool

	now  func() time.Time
	span time.Duration // the full wait that was set: a clock that jumped back cannot stretch it
}

func (e *OpenError) Error() string {
	switch {
	case e.WaitsForProbe:
		return fmt.Sprintf("breaker: %s is %s and waits for a probe; this call may not be the probe", e.Breaker, e.State)
	case e.State == HalfOpen:
		return fmt.Sprintf("breaker: %s is half-open and its probe is in flight", e.Breaker)
	case e.Until.IsZero():
		return fmt.Sprintf("breaker: %s is %s", e.Breaker, e.State)
	default:
		return fmt.Sprintf("breaker: %s is %s until %s", e.Breaker, e.State, e.Until.UTC().Format(time.RFC3339))
	}
}

// Unwrap returns [ErrOpen].
func (e *OpenError) Unwrap() error { return ErrOpen }

// RetryAfter is how long until the next probe may go, measured on the breaker's clock;
// zero when it may go now or when nobody knows (forced open).
func (e *OpenError) RetryAfter() time.Duration {
	if e.Until.IsZero() {
		return 0
	}
	return max(0, min(e.Until.Sub(e.now()), e.span))
}

// RejectedLocally names the error class of a call stopped before it was sent
// (see the classify package's LocalRejection).
func (e *OpenError) RejectedLocally() string { return "breaker_open" }

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError
