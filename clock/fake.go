package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Fake is a Clock that moves only when told to. It is safe for concurrent use and is
// meant for tests: the ones in this module and the ones users write for their agents.
//
// Now takes no lock (a breaker on a fake clock reads it on every rejection, and tests
// that race many callers should not serialise on the clock); Advance and Set do.
type Fake struct {
	mu  sync.Mutex // serialises Advance and Set
	now atomic.Pointer[time.Time]
}

// NewFake returns a fake clock set to start. A zero start means 2026-01-01 00:00 UTC,
// so test output does not depend on when the test ran.
func NewFake(start time.Time) *Fake {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	f := &Fake{}
	f.now.Store(&start)
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	if p := f.now.Load(); p != nil {
		return *p
	}
	return time.Time{} // a zero Fake, not made by NewFake: the zero time, as before
}

// Advance moves the clock forward by d (or back, when d is negative, to test clock skew)
// and returns the new time.
func (f *Fake) Advance(d time.Duration) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.Now().Add(d)
	f.now.Store(&t)
	return t
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now.Store(&t)
}
