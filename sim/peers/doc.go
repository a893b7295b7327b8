// Package peers runs other libraries' guards in agentbreaker's simulator, for the
// comparison rows of docs/partial-outages.md. It is a module of its own so that no
// peer (failsafe-go here) enters the library's dependencies.
//
// failsafe-go's adaptive throttler reads the wall clock, which a simulation in virtual
// time cannot inject; the rows are therefore run inside a testing/synctest bubble, whose
// clock the guard moves to the simulator's before every call (see FailsafeThrottler and
// RunPartial). Its random draw is replaced by a seeded one, so a run's rows repeat.
// ./cmd/partialtable prints the page's tables.
package peers
