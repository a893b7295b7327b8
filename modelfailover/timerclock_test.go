package modelfailover_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// timerClock is a fake clock with timers, so the Failover's time bounds fire
// when a test advances it and never on their own.
type timerClock struct {
	*clock.Fake
	mu     sync.Mutex
	cond   *sync.Cond
	timers map[*fakeTimer]struct{}
}

var _ modelfailover.TimerClock = (*timerClock)(nil)

type fakeTimer struct {
	at time.Time
	f  func()
}

func newTimerClock() *timerClock {
	c := &timerClock{Fake: clock.NewFake(time.Time{}), timers: map[*fakeTimer]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *timerClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &fakeTimer{at: c.Now().Add(d), f: f}
	c.mu.Lock()
	c.timers[t] = struct{}{}
	c.cond.Broadcast()
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[t]
		delete(c.timers, t)
		c.cond.Broadcast()
		return ok
	}
}

// Advance moves the clock and runs the timers that came due, outside the lock.
func (c *timerClock) Advance(d time.Duration) time.Time {
	now := c.Fake.Advance(d)
	c.mu.Lock()
	var due []*fakeTimer
	for t := range c.timers {
		if !t.at.After(now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
	return now
}

// waitArmed blocks until exactly n timers are armed. It waits on a condition, not
// on real time: the test's next step needs the attempt to have armed its timer. The
// wait is bounded (testwait.Bound): past it, it panics with the count it saw, since
// some callers run off the test's goroutine where t.Fatal is not allowed.
func (c *timerClock) waitArmed(n int) {
	expired := false
	stop := time.AfterFunc(testwait.Bound, func() {
		c.mu.Lock()
		expired = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) != n {
		if expired {
			panic(fmt.Sprintf("waited %v for %d armed timers; %d are armed", testwait.Bound, n, len(c.timers)))
		}
		c.cond.Wait()
	}
}
