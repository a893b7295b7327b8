// Package modelfailover keeps an adk-go agent answering when its model endpoint
// fails, by routing each model call across an ordered list of endpoints, each
// behind its own circuit breaker.
//
// A tool outage costs a feature; a model outage costs the whole agent. So an open
// model breaker means "use the next route", not "return an error". Routes are
// tried in order: the primary model in its region, the same model in other
// regions, then weaker models. Breakers are per model and region, taken from a
// [dependencymap.Map] (its model policy is deliberately slow to trip: a breaker
// that trips easily quietly moves a fleet onto a weaker model).
//
// # Two ways in
//
// A [Failover] is a model.LLM: give it to llmagent.Config.Model and it wraps the
// routes, streaming included, while adk's own after-model and on-model-error
// callbacks keep running around it. An agent that keeps its own model registers
// [Failover.BeforeModel], [Failover.AfterModel] and [Failover.OnModelError]
// instead (their types are adk's llmagent callback types); then the agent's model
// serves Routes[0] and the routes without an LLM, and fallbacks with an LLM of
// their own answer from inside the callback, not streamed. Both ways share the
// Failover's breakers and its record of the serving route.
//
// # Outcomes
//
// Every attempt is judged by the classify package:
//
//   - a streamed answer is one success, recorded on its final (non-partial)
//     response, never per chunk; a caller that stops reading gives the permit
//     back without a verdict;
//   - a call fails over only while nothing has been passed to the caller; a
//     failure after partial output is recorded and returned as it is, never
//     replaced by a second answer from another route;
//   - the caller's own cancellation or deadline is neutral, while a per-attempt
//     timeout (the request's Config.HTTPOptions.Timeout, or Config.AttemptTimeout)
//     is the route's failure;
//   - a 429 or 503 that asks for a delay (a RetryInfo detail, or a Retry-After
//     header captured by [NewTransport], or [Failover.Transport] for the agent's own
//     model under the callbacks) is a floor on the cooldown when the
//     route's breaker opens or is already open: no probe goes before the delay
//     has passed;
//   - safety blocks and 400 invalid-argument answers prove the endpoint works:
//     they are successes for its breaker and are returned without failover.
//
// When every breaker refuses, the call is answered with a short, honest message
// that the assistant is temporarily unable to answer, and no model is called.
//
// # Loud by design
//
// Each change of the route that serves calls (to a fallback, back to the primary,
// or to the unavailable answer) is logged as a warning with stable keys (from,
// to, cause, breaker_state, model, region, policy_version), passed to
// Config.OnFailover and to the [Observer], and counted in [Failover.Stats]. Every
// response carries the route that produced it in its CustomMetadata ([MetaRoute],
// [MetaFailover]). Stats also gives the route serving now and the share of calls
// a fallback served over a sliding window, so an alert can catch a fleet that was
// quietly demoted while no error shows.
//
// # Concurrency
//
// A Failover is safe for concurrent use. Hooks, the Observer and the logger are
// called without any lock held, on the goroutine of the call that caused them.
package modelfailover
