package throttle

import "github.com/agentbreaker/agentbreaker/classify"

// Judge says how a classified call counts: accepted when the dependency handled it,
// and counted at all. A call with a Healthy verdict was handled, business refusals (a
// 404, a validation error, a 403) included; so was a Failed call that is not a sign of
// missing capacity (a tool's in-band error). A 429, a 503, a 408, a timeout, a reset
// or any other failure that counts against the dependency was not. A Neutral call (the
// caller cancelled, a local rejection) says nothing about capacity and is not counted:
// do not report it.
func Judge(c classify.Classification) (accepted, counted bool) {
	switch {
	case c.Verdict == classify.Neutral:
		return false, false
	case c.Verdict == classify.Healthy:
		return true, true
	case c.Outcome == classify.Failed && !capacitySignal(c.Class):
		return true, true
	}
	return false, true
}

// Overloaded reports whether a classified call says the dependency had no room for it
// (a 429, a 503, a 408): the failures a throttle answers. Package callbacks keeps them
// from the breaker while the throttle is shedding, so that the breaker opens on
// outages (timeouts, resets, other server errors, or a dependency that accepts nothing
// at all) rather than on the overload the throttle is already handling.
func Overloaded(c classify.Classification) bool {
	return c.Verdict == classify.Counts && c.Outcome == classify.Failed && capacitySignal(c.Class)
}

// capacitySignal reports whether a Failed call of class says the dependency had no
// room for it.
func capacitySignal(c classify.Class) bool {
	switch c {
	case classify.ClassHTTP429, classify.ClassHTTP5xx, classify.ClassHTTP408:
		return true
	}
	return false
}
