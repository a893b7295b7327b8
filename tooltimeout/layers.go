package tooltimeout

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the error Wrap, NewTurn and Layers.Validate return for an invalid
// value.
type ConfigError = agentbreaker.ConfigError

// ErrLayers is the sentinel every layered-timeout error unwraps to.
var ErrLayers = errors.New("tooltimeout: layered timeouts do not fit")

// Layers describes the nested time budgets one tool call lives in. Timeouts must be
// set as one budget: when an outer limit is shorter than what it contains, the outer
// one fires first, every incident looks like "the turn timed out", and no breaker ever
// sees the tool-level failure it should have counted.
type Layers struct {
	// ToolTimeout is the per-attempt timeout of the tool. Required.
	ToolTimeout time.Duration
	// Attempts is how many times the call may be made, retries included. Defaults to 1.
	Attempts int
	// Backoff is the total wait between attempts. Defaults to 0.
	Backoff time.Duration
	// SubAgent is the budget of the sub-agent that calls the tool; 0 when the tool is
	// called by the root agent.
	SubAgent time.Duration
	// Turn is the whole-turn budget; 0 when none is enforced.
	Turn time.Duration
}

// Need returns ToolTimeout × Attempts + Backoff: the longest one tool call can take.
func (l Layers) Need() time.Duration {
	return l.ToolTimeout*time.Duration(max(l.Attempts, 1)) + l.Backoff
}

// Validate checks that each layer fits inside the one around it. A value out of range is
// a *ConfigError naming the Layers field; a layer that does not fit is a *FitError
// that shows the arithmetic, for example
//
//	tooltimeout: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s
func (l Layers) Validate() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "tooltimeout", Field: "Layers." + field, Value: v, Problem: problem}
	}
	switch {
	case l.ToolTimeout <= 0:
		return bad("ToolTimeout", l.ToolTimeout, "must be positive")
	case l.Attempts < 0:
		return bad("Attempts", l.Attempts, "must be at least 1 (0 means 1)")
	case l.Backoff < 0:
		return bad("Backoff", l.Backoff, "must not be negative")
	case l.SubAgent < 0:
		return bad("SubAgent", l.SubAgent, "must not be negative")
	case l.Turn < 0:
		return bad("Turn", l.Turn, "must not be negative")
	}
	need := l.Need()
	sum := fmt.Sprintf("tool timeout %s × %d attempt%s", l.ToolTimeout, max(l.Attempts, 1), plural(max(l.Attempts, 1)))
	if l.Backoff > 0 {
		sum += fmt.Sprintf(" + backoff %s", l.Backoff)
	}
	sum += fmt.Sprintf(" = %s", need)
	if l.SubAgent > 0 && need > l.SubAgent {
		return &FitError{Detail: fmt.Sprintf("%s, more than the sub-agent budget %s", sum, l.SubAgent)}
	}
	if l.Turn > 0 {
		if need > l.Turn {
			return &FitError{Detail: fmt.Sprintf("%s, more than the turn budget %s", sum, l.Turn)}
		}
		if l.SubAgent > l.Turn {
			return &FitError{Detail: fmt.Sprintf("sub-agent budget %s is more than the turn budget %s", l.SubAgent, l.Turn)}
		}
	}
	return nil
}

// FitError is a layer that does not fit in the one around it; Validate returns it. It
// unwraps to ErrLayers.
type FitError struct {
	// Detail shows the arithmetic: "tool timeout 5s × 3 attempts + backoff 1.5s =
	// 16.5s, more than the sub-agent budget 10s".
	Detail string
}

func (e *FitError) Error() string { return ErrLayers.Error() + ": " + e.Detail }

// Unwrap returns ErrLayers.
func (e *FitError) Unwrap() error { return ErrLayers }

// layersError is err, from Layers.Validate, as a *ConfigError about the caller's own
// fields: a Layers field ("Layers.Attempts") is renamed by rename, a *FitError is
// reported as field with the value v.
func layersError(err error, rename func(layersField string) string, field string, v any) *ConfigError {
	var ce *ConfigError
	if errors.As(err, &ce) {
		out := *ce
		out.Field = rename(ce.Field)
		return &out
	}
	problem := err.Error()
	if fe, ok := errors.AsType[*FitError](err); ok {
		problem = "layered timeouts do not fit: " + fe.Detail
	}
	return &ConfigError{Package: "tooltimeout", Field: field, Value: v, Problem: problem, Err: err}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
