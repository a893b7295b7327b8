// Package adaptivelimit is a concurrency limit that learns a dependency's capacity from
// its latency, before the breaker has to trip.
//
// A fixed bulkhead caps the bleed when a dependency slows down, but at a number chosen
// in advance: a dependency sliding into overload gets slow before it fails, its queue
// grows, and a bulkhead of 20 stays full of slow calls long before the failure rate
// reaches the breaker's threshold. A [Limiter] lowers its limit as soon as latency
// rises above the dependency's no-load latency, and raises it again while latency
// stays near it.
//
// # The algorithm
//
// It is Envoy's adaptive concurrency gradient controller (a sampled minimum latency as
// the no-load latency, a gradient of it over the current latency, square-root
// headroom), with Netflix concurrency-limits' Gradient2 rule that the gradient only
// lowers the limit (raising is the headroom's job), and failsafe-go's rule that a limit
// nobody uses is not raised. docs/adaptive-concurrency.md states it with its
// parameters:
//
//   - Every UpdateInterval (once at least MinSamples calls finished since the last
//     update) the sample is the mean latency of those calls, or, when it is larger,
//     how long calls are known to have been in flight with none finishing (the
//     stall, counted from the first update to find them so): a dependency that hangs
//     shows in it long before the first of its calls times out, and a slow trickle of
//     calls does not. With a stall longer than twice the target, the update runs
//     without waiting for samples.
//   - The target is noLoad × (1 + Tolerance). Above it the limit is multiplied by
//     target/sample: at least ½ for a mean, unclamped for a stall. At or below it, and with at least half the limit in
//     use at some moment since the last update, the limit grows by its square root
//     times (target − sample)/(target − noLoad), at most 1: the whole root at the
//     no-load latency, nothing at the target, so that it does not leap past the
//     target. It stays between MinLimit and MaxLimit.
//   - The no-load latency is the minimum latency of the calls that succeeded (a
//     windowed minimum: any faster success lowers it at the next update), measured
//     again every NoLoadInterval: the limit is held at half its value until MinSamples
//     calls admitted under it have succeeded, and their minimum becomes the no-load
//     latency, higher or lower than before. Without that, a minimum taken while the
//     limit sits above the dependency's capacity would only see queued calls and rise
//     with the queue. Timeouts and fast failures never lower it: [Permit.TimedOut] is
//     a sample for the limit only, [Permit.Release] for nothing.
//
// # Priorities
//
// A call of priority p (package throttle's priorities) is admitted while fewer calls
// are in flight than its share of the limit, rounded up and at least 1: Low 60%,
// Normal 80%, High 90%, Critical 100%. When the limit binds, the lowest priorities are
// refused first, and a Critical call finds room that a Normal one cannot take. The
// limit is therefore what the most important calls may use; a dependency called only
// at Normal settles at a limit a quarter above what it serves.
//
// A refusal is a [*LimitError], returned at once: the limiter never queues. It unwraps
// to [ErrLimited] and is a local rejection; agentbreaker's callbacks answer it with the
// bulkhead's busy payload and never count it as the dependency's failure.
//
// # Time
//
// Acquire, Done and TimedOut read Config.Clock; AcquireAt, DoneAt and TimedOutAt take
// the time, so that the controller can be tested and simulated without a clock.
package adaptivelimit
