package clock

import "time"

// Clock tells the time. Implementations must be safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// System returns the precise system clock (time.Now). A breaker given it runs on its
// default clock, which is the same time read more cheaply on its lock-free paths (see
// breaker.Config.Clock).
func System() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// IsSystem reports whether c is the clock [System] returns. Packages with a faster
// default of their own (the breaker's coarse clock) treat it as they treat nil: both
// mean "the system's time".
func IsSystem(c Clock) bool {
	_, ok := c.(systemClock)
	return ok
}

// OrSystem returns c, or the system clock when c is nil.
func OrSystem(c Clock) Clock {
	if c == nil {
		return System()
	}
	return c
}
