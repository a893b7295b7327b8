package retry

import (
	"context"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// Sleeper waits between attempts. Sleep returns nil after d, or ctx's error as soon as
// ctx is done. Implementations must be safe for concurrent use.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemSleeper sleeps on real timers. It is the default Sleeper.
type SystemSleeper struct{}

// Sleep waits for d or for ctx to be done.
func (SystemSleeper) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// FakeSleeper is a Sleeper for tests: it returns at once, records every wait and, when
// Clock is set, moves that fake clock forward by the wait, so code that sleeps and then
// reads the clock sees time pass without a test waiting for it. It is safe for
// concurrent use; concurrent sleepers each advance the shared clock.
type FakeSleeper struct {
	// Clock, when set, is advanced by each Sleep.
	Clock *clock.Fake

	mu    sync.Mutex
	slept []time.Duration
}

// Sleep records d, advances Clock by d and returns ctx's error, if any.
func (f *FakeSleeper) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	f.slept = append(f.slept, d)
	f.mu.Unlock()
	if f.Clock != nil && d > 0 {
		f.Clock.Advance(d)
	}
	return nil
}

// Slept returns the waits so far, in the order they were asked for.
func (f *FakeSleeper) Slept() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.slept...)
}
