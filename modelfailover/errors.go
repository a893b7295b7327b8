package modelfailover

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

var (
	// ErrInvalidConfig is the sentinel every *ConfigError unwraps to.
	ErrInvalidConfig = errors.New("modelfailover: invalid config")
	// ErrAllRoutesFailed is the sentinel a *RoutesError unwraps to: every route that
	// could be tried was tried in this call, and each failed.
	ErrAllRoutesFailed = errors.New("modelfailover: every route failed")
	// ErrNoFinalResponse is returned when a model ends its answer (or its stream,
	// after partial output) without a final response and without an error.
	ErrNoFinalResponse = errors.New("modelfailover: the model ended without a final response")
	// ErrEmptyAnswer is returned when a route answers with nothing at all: no
	// content, no finish reason, no block reason. It counts against the route.
	ErrEmptyAnswer = errors.New("modelfailover: the model answered with nothing")
	// ErrNoPrimaryModel is returned by the failover model when Routes[0].LLM is nil:
	// such a configuration is meant for the callbacks, where the agent's own model
	// is the primary.
	ErrNoPrimaryModel = errors.New("modelfailover: Routes[0].LLM is nil: the failover model needs the primary's model.LLM (or use the callbacks with the agent's own model)")
)

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// AttemptError is one failed attempt of a call.
type AttemptError struct {
	Route string         // the route's name
	Class classify.Class // how the failure was classified
	Err   error          // the model's error
}

// RoutesError is returned when every route that could be tried failed. It unwraps
// to [ErrAllRoutesFailed] and to the last attempt's error, so errors.As still
// finds a genai.APIError.
type RoutesError struct {
	// Attempts lists the failed attempts in the order they were made.
	Attempts []AttemptError
	// Skipped names the routes whose breakers refused the call.
	Skipped []string
}

func (e *RoutesError) Error() string {
	var b strings.Builder
	b.WriteString(ErrAllRoutesFailed.Error())
	for i, a := range e.Attempts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s (%v)", a.Route, a.Class, a.Err)
	}
	if len(e.Skipped) > 0 {
		fmt.Fprintf(&b, "; breaker open: %s", strings.Join(e.Skipped, ", "))
	}
	return b.String()
}

// Unwrap returns [ErrAllRoutesFailed] and the last attempt's error.
func (e *RoutesError) Unwrap() []error {
	out := []error{ErrAllRoutesFailed}
	if n := len(e.Attempts); n > 0 && e.Attempts[n-1].Err != nil {
		out = append(out, e.Attempts[n-1].Err)
	}
	return out
}
