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

// The coarse clock's state. cached and used are read on every call and written about
// once per tick, so readers on different cores share the cache line without bouncing it.
var (
	cached  atomic.Int64 // nanoseconds since base, refreshed by the ticker
	used    atomic.Bool  // set by readers, cleared by the ticker each tick
	running atomic.Bool  // the ticker goroutine is alive
)

// CoarseBase is the instant coarse readings count from.
func CoarseBase() time.Time { return base }

// CoarseNanos returns the monotonic nanoseconds since [CoarseBase], at most about
// [CoarseResolution] old. It is safe for concurrent use and allocates nothing.
func CoarseNanos() int64 {
	if used.Load() {
		return cached.Load()
	}
	return wake()
}

// wake runs on the first read after a tick (or after the ticker stopped): it publishes
// a precise reading, marks the clock used and makes sure the ticker runs.
func wake() int64 {
	n := int64(time.Since(base))
	storeLater(n)
	used.Store(true)
	// Dekker-style pairing with the ticker's shutdown: the ticker clears running and
	// then checks used; we set used and then check running. One of the two sees the other.
	if !running.Load() && running.CompareAndSwap(false, true) {
		go tick()
	}
	return cached.Load()
}

// storeLater publishes n unless a later reading is already there, so coarse time
// never runs backwards.
func storeLater(n int64) {
	for {
		old := cached.Load()
		if n <= old || cached.CompareAndSwap(old, n) {
			return
		}
	}
}

func tick() {
	t := time.NewTicker(CoarseResolution)
	defer t.Stop()
	idle := 0
	for range t.C {
		storeLater(int64(time.Since(base)))
		if used.Swap(false) {
			idle = 0
			continue
		}
		if idle++; idle < coarseIdleTicks {
			continue
		}
		running.Store(false)
		// A reader may have marked the clock used between the Swap above and the Store:
		// it may also have seen running still true and not started a ticker. Keep going.
		if used.Load() && running.CompareAndSwap(false, true) {
			idle = 0
			continue
		}
		return
	}
}
