// Package breaker is agentbreaker's circuit breaker core: one breaker per dependency,
// with no knowledge of adk-go, HTTP or metrics.
//
// # States
//
// A breaker starts [Closed] and measures calls in a rolling window: time-based (Window
// cut into Buckets; the default) or count-based (the last WindowCalls calls). After
// every measured call in the closed state, a success as much as a failure, it trips
// [Open] when both gates are crossed: the window holds at least MinimumCalls calls
// (min(MinimumCalls, WindowCalls) for a count window) AND
// float64(failures)/float64(calls) ≥ FailureRateThreshold (or, with slow calls
// tracked, float64(slow)/float64(calls) ≥ SlowCallRateThreshold). Five failures out
// of five calls, under a volume gate of twenty, do not trip it; neither do five
// failures out of fifty thousand; three failures then a success, under a gate of four,
// do.
//
// After the cooldown the next caller moves it [HalfOpen] and becomes the probe.
// HalfOpenProbes probes (default one) get through per half-open period, however many
// race for them; the rest are rejected at once. A probe is a lease of ProbeLease: if
// it has not reported when the lease runs out, its place goes to another probe and its
// late report is dropped. Probes that all succeed close the breaker (its window
// emptied); one failure, or one probe slower than SlowCallThreshold, reopens it with a
// fresh cooldown: min(Cooldown × CooldownMultiplier^failedProbes × (1 + Jitter×U),
// MaxCooldown).
//
// A delay the dependency asks for (Retry-After, RetryInfo), in any report, is a floor:
// an open breaker's reopen time moves that late at once, and the next time it opens it
// stays open at least that long; the breaker forgets it when it closes. Operators can
// force a breaker open, force it closed (switched off, still measuring, window kept) or
// reset it (closed, window emptied, cooldown growth and stated delays forgotten).
//
// # Two steps
//
//	p, err := b.Allow()
//	if err != nil {
//		// *OpenError, unwrapping to ErrOpen: answer without the dependency.
//		return
//	}
//	res, err := callDependency()
//	p.Report(breaker.Report{Verdict: verdictOf(err)})
//
// A permit reports once; later reports through it are no-ops, a permit that never
// reports costs nothing, and a report that arrives after the breaker changed state is
// dropped (each state change starts a new generation).
//
// # Cost
//
// In the closed state Allow is one atomic load and a success report is one
// compare-and-swap on a striped counter, reading a coarse monotonic clock (see package
// clock); neither allocates or takes a lock, and concurrent callers on different cores
// write different cache lines. A success takes the breaker's lock only when it is the
// first after its bucket ended, or while one more success could trip the breaker (the
// failures already reach the threshold against MinimumCalls): at most MinimumCalls
// successes in a row. Rejection by an open breaker is also lock-free and
// allocation-free.
//
// # Time
//
// Every method that depends on time has an ...At form taking the time, and
// Config.Clock injects the clock, so tests never sleep.
//
// # Events
//
// State changes are delivered to Config.OnStateChange listeners in order, outside the
// breaker's lock, each with its cause in words ("failure rate 60% over 20 calls ≥
// 50%", "probe failed; retry-after 40s", "forced open by operator: deploy").
package breaker
