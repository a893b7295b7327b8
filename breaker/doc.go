// Package breaker is agentbreaker's circuit breaker core: one breaker per dependency,
// with no knowledge of adk-go, HTTP or metrics.
//
// # States
//
// A breaker starts [Closed] and measures calls in a rolling, time-bucketed window. It
// trips [Open] when both gates are crossed: the failure rate (or, optionally, the
// share of slow calls) reaches its threshold AND the window holds at least
// MinimumCalls calls. Five failures out of five calls, under a volume gate of twenty,
// do not trip it; neither do five failures out of fifty thousand.
//
// After the cooldown the next caller moves it [HalfOpen] and becomes the probe. Only
// HalfOpenProbes callers (default one) get through, however many race for it; the
// rest are rejected at once. Probes that all succeed close the breaker; one failure
// reopens it with a fresh cooldown, which may grow with each failed probe. A probe is
// a lease: if it never reports (its caller crashed or was cancelled), another probe may
// go once the lease runs out.
//
// A delay the dependency asks for (Retry-After, RetryInfo) is a floor on the cooldown
// and only ever moves the reopen time later. Operators can force a breaker open, force
// it closed (switched off, still measuring) or reset it.
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
// In the closed state Allow is one atomic load and a success report is one atomic add
// on a striped counter, reading a coarse monotonic clock (see package clock); neither
// allocates or takes a lock, and concurrent callers on different cores write different
// cache lines. Rejection by an open breaker is also lock-free and allocation-free.
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
