package clock

import (
	"sync/atomic"
	"time"
)

// CoarseResolution is how often the coarse clock is refreshed while it is in use.
const CoarseResolution = time.Millisecond

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

	// beforeStop, when set by a test, runs where a reader can race the ticker's shutdown.
	beforeStop func()
}

var system = coarse{start: func(c *coarse) {
	t := time.NewTicker(CoarseResolution)
	go func() {
		defer t.Stop()
		c.tick(t.C, coarseIdleTicks)
	}()
}}

// CoarseBase is the instant coarse readings count from.
func CoarseBase() time.Time { return base }

// CoarseNanos returns the monotonic nanoseconds since [CoarseBase], at most about
// [CoarseResolution] old while the process has CPU to run the ticker (a saturated
// process may run it a scheduler slice late). It is safe for concurrent use and
// allocates nothing.
func CoarseNanos() int64 {
	// Written out rather than calling system.nanos, to stay within the inlining budget.
	if system.used.Load() {
		return system.cached.Load()
	}
	return system.wake()
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
	c.storeLater(int64(time.Since(base)))
	c.used.Store(true)
	// Pairs with the ticker's shutdown: the ticker clears running and then checks used;
	// we set used and then check running. One of the two sees the other's write.
	if !c.running.Load() && c.running.CompareAndSwap(false, true) {
		c.start(c)
	}
	return c.cached.Load()
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
		c.storeLater(int64(time.Since(base)))
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
