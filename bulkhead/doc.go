// Package bulkhead caps how many calls to one dependency may be in progress at once.
//
// A breaker trips only after its window fills; until then a dependency that went from
// 50ms to a 10-second timeout can hold every worker the process has. A bulkhead keeps
// that damage to the dependency's own share: with a limit of 20, at most 20 calls wait
// on it, and the 21st is rejected at once instead of queueing.
//
// A rejection is a [*FullError]. It is a local rejection (the dependency never saw the
// call), yet agentbreaker's callbacks report it to the breaker as a failure, because a
// saturated bulkhead is direct evidence the dependency is slow. When rejections keep
// coming (SustainedRejections within SustainedWindow) one rejection in the window is
// flagged Sustained, so the callbacks can raise an event of its own when the breaker is
// still closed.
//
// [Group] keeps one bulkhead per dependency key.
package bulkhead
