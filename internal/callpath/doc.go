// Package callpath is the one call path every hop runs: the function tools and agent
// tools of package callbacks, the requests of a remote agent (a2aguard), and the
// other seams as they move onto it. A hop translates its framework's seam into a
// [Call] and back; the path decides whether the call is sent, and settles it when it
// ends, in one place: the breaker's report, the dependency's stated delay, the class
// a refusal cites, and what operators see (an Event, a metric and a log record, from
// the [Sink]).
//
// The stages run in order on admission and in reverse on settlement, as failsafe-go's
// policy executors and Envoy's filter chain do:
//
//	admit:  hold (a delay the dependency stated) -> breaker (and its probe)
//	settle: breaker report -> hold noted -> the class remembered -> Sink
//
// A call carries its own ticket (the breaker's permit, its start) from admission to
// settlement, so no stage keeps a side table per call.
package callpath
