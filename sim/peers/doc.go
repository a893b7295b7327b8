// Package peers runs other libraries' guards in agentbreaker's simulator, for the
// comparison rows of docs/partial-outages.md and docs/adaptive-concurrency.md. It is a
// module of its own so that no peer (failsafe-go here) enters the library's
// dependencies.
//
// failsafe-go's adaptive throttler reads the wall clock, which a simulation in virtual
// time cannot inject; the rows are therefore run inside a testing/synctest bubble, whose
// clock the guard moves to the simulator's before every call (see FailsafeThrottler and
// RunPartial). Its random draw is replaced by a seeded one, so a run's rows repeat.
// ./cmd/partialtable prints the page's tables. FailsafeLimiter runs failsafe-go's
// adaptive concurrency limiter the same way, for the latency-cliff rows of
// docs/adaptive-concurrency.md, which ./cmd/clifftable prints with issue 34's goals.
package peers
