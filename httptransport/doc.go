// Package httptransport is an http.RoundTripper for the HTTP clients that tools use.
// Only the transport knows whether a request left the machine, so it is where the
// outcome of a failed call is decided.
//
// For each request the [Transport]:
//
//   - finds the dependency by the request's host (dependencymap.Map.ForHost), so that
//     tools can be guarded by configuration without annotations;
//   - asks that dependency's breaker, then its bulkhead, before anything is dialed; a
//     refusal returns at once as FAILED_BEFORE_SEND (breaker_open, bulkhead_full). A
//     full bulkhead also counts as a failure of the breaker, as it does in the
//     callbacks package: slots that are not coming back mean the dependency is slow,
//     even though this request never left;
//   - sends the operation's idempotency key (retry.IdempotencyKeyFrom on the request's
//     context) in the Idempotency-Key header;
//   - watches the request with net/http/httptrace and decides the outcome: no
//     connection, or nothing written on it, is FAILED_BEFORE_SEND; a failure after the
//     request was written (a timeout, a reset) is UNKNOWN; a response is classified by
//     its status, with Retry-After captured;
//   - reports the classification to the breaker (Healthy as a success, Counts as a
//     failure, Neutral ignored) with the server's stated delay as the breaker's floor.
//
// Failed round trips return an [*Error] that carries the classification;
// [ClassificationOf] and [Classify] read it back, from the error or from the response,
// for a retry.Func.
//
// # Timeouts
//
// Config.Timeout is the transport's own limit on a round trip; when it fires the call
// counts against the dependency. The caller's context ending is neutral instead: the
// caller gave up, which says nothing about the dependency. http.Client.Timeout looks
// like the caller's deadline from inside a transport, so prefer Config.Timeout.
//
// # One holder per breaker
//
// A breaker should be consulted once per call. When the transport guards a host, leave
// retry.Operation.Breaker nil (the transport reports the breaker's state to the retry
// records through retry.ReportBreakerState), and do not guard the same dependency
// again in a tool callback, or a half-open breaker's single probe would be taken by the
// outer layer and the inner one would refuse it.
//
// # Concurrency
//
// A Transport is safe for concurrent use. Config.OnResult hooks run on the caller's
// goroutine, outside any lock.
package httptransport
