package modelfailover

import (
	"context"
	"strconv"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// Endpoint identifies a route in events and statistics. It is a plain value.
type Endpoint struct {
	Name   string // the route's name, or Unavailable
	Model  string // "" for Unavailable
	Region string
	// Primary reports the first route.
	Primary bool
}

// Cause says why the serving route changed, or why one call was served by a
// fallback. It is a bounded set, safe as a metric label: a [classify.Class] naming
// the failure that drove traffic away (http_5xx, http_429, timeout, …, or
// breaker_open when the route's breaker refused the call without a failure of
// ours to blame, as when an operator forced it open), or one of the constants
// below.
type Cause string

const (
	// CauseBreakerOpen: the route's breaker refuses calls (open, half-open, or
	// forced open) and no failure seen by this Failover explains it.
	CauseBreakerOpen Cause = Cause(classify.ClassBreakerOpen)
	// CauseProbeSucceeded: a route ahead of the serving one answered its half-open
	// probe and its breaker closed, so traffic returned to it.
	CauseProbeSucceeded Cause = "probe_succeeded"
	// CauseRecovered: the breaker of a route ahead of the serving one admits calls
	// again without a probe of this Failover closing it (an operator reset it or
	// forced it closed, or another user of the breaker closed it).
	CauseRecovered Cause = "recovered"
	// CauseAllRoutesOpen: every route's breaker refused the call, so the
	// unavailable answer was given without calling a model.
	CauseAllRoutesOpen Cause = "all_routes_open"
)

// Causes returns every Cause in a fixed order, so telemetry can create its label
// values up front. The caller owns the slice.
func Causes() []Cause {
	classes := classify.Classes()
	out := make([]Cause, 0, len(classes)+3)
	for _, c := range classes {
		if c != classify.ClassNone {
			out = append(out, Cause(c))
		}
	}
	return append(out, CauseProbeSucceeded, CauseRecovered, CauseAllRoutesOpen)
}

// Event is one change of the serving route (see [Failover] for the rule). It is a
// plain value, safe to copy and to keep.
type Event struct {
	// From is the route that served before the change; To serves after it. Either
	// may be the Unavailable pseudo-route.
	From, To Endpoint
	// Cause is why the change happened.
	Cause Cause
	// Reason says the same in words for a person reading a log. It is built from
	// fixed text, route names, error classes and status codes only: nothing the
	// model endpoint wrote reaches it, so it is safe to log and to page with.
	Reason string
	// RequestID is the adk-go invocation ID of the model call that saw the change,
	// when that call ran under an adk-go context; "" otherwise.
	RequestID string
	// BreakerState is the state of the breaker whose change caused the event: From's
	// when traffic moves away from From, To's when it returns to To.
	BreakerState breaker.State
	// PolicyVersion is the version of the policy of that same breaker.
	PolicyVersion string
	// Fallback reports that To is not the primary route.
	Fallback bool
	// At is when the change happened, on Config.Clock.
	At time.Time
}

// ServedBy says how one model call was answered. Its String is a metric label.
type ServedBy uint8

const (
	// ServedPrimary: the first route answered.
	ServedPrimary ServedBy = iota + 1
	// ServedFallback: another route answered.
	ServedFallback
	// ServedUnavailable: every route was open; the unavailable answer was given.
	ServedUnavailable
	// ServedFailed: the call ended with an error (every route that could be tried
	// failed, or a failure that no other route can fix, such as a 400).
	ServedFailed
	// ServedAbandoned: the caller stopped reading before the answer was complete
	// (it left a stream, or adk-go never delivered the callbacks' outcome). The
	// route is judged neither way.
	ServedAbandoned
)

func (s ServedBy) String() string {
	switch s {
	case ServedPrimary:
		return "primary"
	case ServedFallback:
		return "fallback"
	case ServedUnavailable:
		return "unavailable"
	case ServedFailed:
		return "failed"
	case ServedAbandoned:
		return "abandoned"
	}
	return "ServedBy(" + strconv.Itoa(int(s)) + ")"
}

// Call describes one finished model call, for an [Observer]. It is a plain value.
type Call struct {
	// Route is the route that answered, or that failed last; Unavailable when no
	// model was called.
	Route Endpoint
	// ServedBy says how the call was answered.
	ServedBy ServedBy
	// Class is the class of the final outcome (none for an answer).
	Class classify.Class
	// Attempts is how many routes were called.
	Attempts int
	// FallbackFrom, when ServedBy is ServedFallback, is the first route that did
	// not serve the call, and FallbackCause why (the class of its failure, or
	// breaker_open when its breaker refused the call). Zero otherwise.
	FallbackFrom  Endpoint
	FallbackCause Cause
	// RequestID is the adk-go invocation ID of the call, when it ran under an
	// adk-go context; "" otherwise.
	RequestID string
	// At is when the call finished, on Config.Clock.
	At time.Time
}

// Observer receives the Failover's measurements as they happen, for a telemetry
// adapter (counters of calls and failovers, span annotations). Its methods are
// called outside any lock of the Failover and must be safe for concurrent use.
// The gauges (the serving route, the fallback share) are read with
// [Failover.Stats] instead, at scrape time.
//
// The context is the model call's: adk-go's context (with the invocation ID and
// the "generate_content" span) when the call came through adk-go.
type Observer interface {
	// ObserveCall is called exactly once per model call, when it ends: answered,
	// failed, given the unavailable answer, or abandoned by its caller. It runs on
	// the call's goroutine.
	ObserveCall(ctx context.Context, c Call)
	// ObserveFailover is called once per change of the serving route, right after
	// Config.OnFailover and in the same order as the changes happened. It runs on
	// the goroutine of the call that saw the change, or, when two changes race, on
	// the goroutine delivering the earlier one; ctx is always the context of the
	// call that saw this change.
	ObserveFailover(ctx context.Context, e Event)
}
