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
//     back without a verdict, and the call is reported as abandoned;
//   - a call fails over only while nothing has been passed to the caller; a
//     failure after partial output is recorded and returned as it is, never
//     replaced by a second answer from another route;
//   - the caller's own cancellation or deadline is neutral, while a time bound of
//     the Failover (see "Time bounds" on [Failover]) or the request's own
//     Config.HTTPOptions.Timeout is the route's failure;
//   - a 429 or 503 that asks for a delay (a RetryInfo detail, or a Retry-After
//     header captured by [NewTransport], or [Failover.Transport] for the agent's own
//     model under the callbacks) is a floor on the cooldown when the
//     route's breaker opens or is already open: no probe goes before the delay
//     has passed;
//   - safety blocks, blocked prompts and 400 invalid-argument answers prove the
//     endpoint works: they are successes for its breaker and are returned without
//     failover; an answer with nothing at all in it (no content, no finish reason,
//     no block reason, such as a broken gateway's "{}") is the endpoint's failure.
//     This is decided from the answer itself: adk-go's Gemini model turns an
//     answer without candidates into a bare error when not streaming, so there
//     the answer is read by [NewTransport]; without it such an answer counts as
//     an unclassified failure, a blocked prompt included.
//
// # Any model, and retries owned by the failover
//
// A route's LLM can be any model.LLM: Gemini through genai, an OpenAI-compatible
// endpoint through adk-go's model/openaimodel (build it with the
// modelfailover/openairoute package), or a model of your own over net/http. Put
// [NewTransport] (for the agent's own model under the callbacks,
// [Failover.Transport]) on each one's HTTP client; the transport knows each
// request's attempt from its context, so no SDK has to carry a header for it.
// The failover owns model retries: an attempt that a route's breaker admitted
// sends one request, and trying again means the next route, never the SDK's own
// back-off (genai's RetryOptions are pinned off per request; openai-go is told
// not to retry a failed answer; any re-send within a failed attempt is refused
// in the process and counted in [Stats]). An error carrying an HTTP status (such
// as openai-go's *openai.Error) is classified by that status even without the
// transport (classify.HTTPStatusError), and an OpenAI answer stopped by a content
// filter is a safety block.
//
// When every breaker refuses, the call is answered with a short, honest message
// that the assistant is temporarily unable to answer, and no model is called.
//
// # Loud by design, and only when it is true
//
// A call answered by a fallback while the primary's breaker is closed is a
// per-call fallback: it is counted (the Observer's [Call] says from which route
// and why, and Stats gives the share of calls a fallback served over a sliding
// window) but not announced. A failover is a change of the serving route, which
// follows the breakers (the precise rule is on [Failover]); each is announced
// once and in order: one warning log record with stable keys (from, to, cause,
// reason, request_id, breaker_state, model, region, policy_version), one call of
// Config.OnFailover and one [Observer] event, and it is counted in
// [Failover.Stats]. Reasons are built from fixed text, route names, error
// classes and status codes: nothing the endpoint wrote reaches a log record, a
// hook or a label. Every response carries the route that produced it in its
// CustomMetadata ([MetaRoute], [MetaFailover]).
//
// # Concurrency
//
// A Failover is safe for concurrent use. Hooks, the Observer and the logger are
// called without any lock held, on the goroutine of the call that caused them.
package modelfailover
