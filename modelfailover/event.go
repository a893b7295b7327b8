package modelfailover

import (
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

// Cause says why the serving route changed. It is a bounded set, safe as a metric
// label: a [classify.Class] naming the failure that drove traffic away (http_5xx,
// http_429, timeout, …, or breaker_open when the route's breaker refused the call),
// or one of the constants below.
type Cause string

const (
	// CauseBreakerOpen: the route that was serving has an open (or half-open and
	// busy) breaker, so the call skipped it.
	CauseBreakerOpen Cause = Cause(classify.ClassBreakerOpen)
	// CauseProbeSucceeded: a route ahead of the serving one answered its half-open
	// probe, so traffic returned to it.
	CauseProbeSucceeded Cause = "probe_succeeded"
	// CauseRecovered: a route ahead of the serving one answered an ordinary call
	// (its breaker had closed, or had never opened).
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

// Event is one change of the route that serves calls. It is a plain value, safe
// to copy and to keep.
type Event struct {
	// From is the route that served the previous call; To serves this one. Either
	// may be the Unavailable pseudo-route.
	From, To Endpoint
	// Cause is why the change happened.
	Cause Cause
	// Reason says the same in words for a person reading a log.
	Reason string
	// BreakerState is the state of From's breaker when the change happened (of To's
	// when From is Unavailable).
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
	// At is when the call finished, on Config.Clock.
	At time.Time
}

// Observer receives the Failover's measurements as they happen, for a telemetry
// adapter (counters of calls and failovers). Its methods are called outside any
// lock of the Failover, on the goroutine of the model call, and must be safe for
// concurrent use. The gauges (the serving route, the fallback share) are read
// with [Failover.Stats] instead.
type Observer interface {
	// ObserveCall is called once per model call, when it ends.
	ObserveCall(Call)
	// ObserveFailover is called once per change of the serving route, after
	// Config.OnFailover.
	ObserveFailover(Event)
}
