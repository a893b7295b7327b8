package clock

import (
	"sync/atomic"
	"time"
)

// coarseResolution is how often the coarse clock is refreshed while it is in use.
const coarseResolution = time.Millisecond

// coarseIdleTicks is how many ticks without a reader stop the ticker.
const coarseIdleTicks = 1000

// base anchors coarse readings: they are monotonic nanoseconds since base.
var base = time.Now()

// coarse is a cached monotonic clock kept fresh by a ticker goroutine that runs only
// while someone reads it. cached and used are read on every call and written about once
// per tick, so readers on different cores share their cache line without bouncing it.
type coarse struct {
	cached  atomic.Int64 // nanoseconds since base
	used    atomic.Bool  // set by readers, cleared by the ticker each tick
	running atomic.Bool  // the ticker goroutine is alive
	start   func(*coarse)
	now     func() int64 // a precise reading; nil means time.Since(base)

	// beforeStop, when set by a test, runs where a reader can race the ticker's shutdown.
	beforeStop func()
}

var system = coarse{start: func(c *coarse) {
	t := time.NewTicker(coarseResolution)
	go func() {
		defer t.Stop()
		c.tick(t.C, coarseIdleTicks)
	}()
}}

// CoarseBase is the instant coarse readings count from.
func CoarseBase() time.Time { return base }

// CoarseNanos returns the monotonic nanoseconds since [CoarseBase], at most about
// 1ms (the coarse clock's resolution) old while the process has CPU to run the ticker (a saturated
// process may run it a scheduler slice late). It is safe for concurrent use and
// allocates nothing.
func CoarseNanos() int64 {
	// Written out rather than calling system.nanos, to stay within the inlining budget.
	if system.used.Load() {
		return system.cached.Load()
	}
	return system.wake()
}

// PreciseNanos reads the system's monotonic clock, publishes the reading to the coarse
// clock (so coarse readers after it see at least this instant) and returns it. Paths that
// decide something from a reading (a state change, a deadline, a timed call) use it, and
// busy hot paths call it now and then (see [RefreshEvery]) so that the coarse clock stays
// fresh even when its ticker cannot get a CPU. It is safe for concurrent use and
// allocates nothing; it costs one monotonic clock read (tens of nanoseconds).
func PreciseNanos() int64 { return system.refresh() }

// RefreshEvery is how often, in calls, a busy hot-path counter refreshes the coarse clock
// with a precise reading: callers that count events on a striped counter call
// [PreciseNanos] when their stripe's count is a multiple of it. It bounds the coarse
// clock's staleness by traffic when the ticker is starved of CPU.
const RefreshEvery = 256

func (c *coarse) refresh() int64 {
	n := c.read()
	c.storeLater(n)
	return max(n, c.cached.Load())
}

func (c *coarse) nanos() int64 {
	if c.used.Load() {
		return c.cached.Load()
	}
	return c.wake()
}

// wake runs on the first read after a tick, or after the ticker stopped: it publishes a
// precise reading, marks the clock used and makes sure the ticker runs.
func (c *coarse) wake() int64 {
	c.storeLater(c.read())
	c.used.Store(true)
	// Pairs with the ticker's shutdown: the ticker clears running and then checks used;
	// we set used and then check running. One of the two sees the other's write.
	if !c.running.Load() && c.running.CompareAndSwap(false, true) {
		c.start(c)
	}
	return c.cached.Load()
}

func (c *coarse) read() int64 {
	if c.now != nil {
		return c.now()
	}
	return int64(time.Since(base)) // base carries a monotonic reading: one clock read
}

// storeLater publishes n unless a later reading is already there, so coarse time never
// runs backwards.
func (c *coarse) storeLater(n int64) {
	for {
		old := c.cached.Load()
		if n <= old || c.cached.CompareAndSwap(old, n) {
			return
		}
	}
}

// tick refreshes the clock on every tick and returns after idleLimit ticks without a
// reader.
func (c *coarse) tick(ticks <-chan time.Time, idleLimit int) {
	idle := 0
	for range ticks {
		c.storeLater(c.read())
		if c.used.Swap(false) {
			idle = 0
			continue
		}
		if idle++; idle < idleLimit {
			continue
		}
		if c.beforeStop != nil {
			c.beforeStop()
		}
		c.running.Store(false)
		// A reader may have marked the clock used between the Swap above and the Store,
		// and seen running still true, so it started no ticker: keep going for it.
		if c.used.Load() && c.running.CompareAndSwap(false, true) {
			idle = 0
			continue
		}
		return
	}
}
