package clock

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. It is safe for concurrent use and is
// meant for tests: the ones in this module and the ones users write for their agents.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a fake clock set to start. A zero start means 2026-01-01 00:00 UTC,
// so test output does not depend on when the test ran.
func NewFake(start time.Time) *Fake {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Fake{now: start}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d (or back, when d is negative, to test clock skew)
// and returns the new time.
func (f *Fake) Advance(d time.Duration) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	return f.now
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}
