// Package clock supplies the time source agentbreaker's state machines run on.
//
// Every component that measures time takes a [Clock] in its Config; nil means the
// system clock. Tests pass a [Fake] and move it by hand, so no test waits for real time.
//
// The system clock used on the breaker's hot path is coarse: a ticker goroutine
// publishes the monotonic time about once a millisecond, and a read is one atomic
// load instead of a call into the OS clock (about 25–50 ns on a cloud VM, which would
// be most of a breaker's budget). The ticker runs only while something reads it and
// stops itself after a second without readers, so an idle process pays nothing.
//
// A saturated process can keep the ticker from running for a long time (one report
// measured a second with 64 busy goroutines on 2 cores), so the ticker is not the only
// writer: [PreciseNanos] reads the OS clock and publishes the reading, and callers
// that count events on a hot path call it every [RefreshEvery] events. The breaker
// does so for successes and rejections, and reads precisely for every decision it
// takes under its lock and for timed calls.
package clock
