package clock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCoarseNanosFollowsTheSystemClock(t *testing.T) {
	t.Parallel()
	first := CoarseNanos()
	precise := int64(time.Since(base))
	require.InDelta(t, precise, first, float64(100*time.Millisecond))
	last := first
	for range 100_000 {
		n := CoarseNanos()
		require.GreaterOrEqual(t, n, last, "coarse time never runs backwards")
		last = n
	}
	require.Equal(t, base, CoarseBase())
}

// manualCoarse returns a coarse clock whose ticker is driven by the test.
func manualCoarse() (*coarse, chan time.Time, *sync.WaitGroup, *int) {
	ticks := make(chan time.Time)
	var wg sync.WaitGroup
	starts := 0
	c := &coarse{}
	c.start = func(c *coarse) {
		starts++
		wg.Go(func() { c.tick(ticks, 3) })
	}
	return c, ticks, &wg, &starts
}

func TestTickerStopsWhenIdleAndRestartsOnRead(t *testing.T) {
	t.Parallel()
	c, ticks, wg, starts := manualCoarse()
	c.nanos()
	require.Equal(t, 1, *starts)
	require.True(t, c.running.Load())

	ticks <- time.Time{} // the first tick clears the read of nanos() above
	c.nanos()            // a reader in this tick keeps the ticker alive
	for range 3 {
		ticks <- time.Time{}
	}
	require.True(t, c.running.Load(), "idle for 2 ticks after the last read")
	ticks <- time.Time{} // third idle tick: the ticker stops
	wg.Wait()
	require.False(t, c.running.Load())

	before := c.cached.Load()
	n := c.nanos() // a read after the stop is precise and restarts the ticker
	require.GreaterOrEqual(t, n, before)
	require.Equal(t, 2, *starts)
	close(ticks)
	wg.Wait()
}

func TestTickerKeepsGoingForAReaderThatRacedItsStop(t *testing.T) {
	t.Parallel()
	ticks := make(chan time.Time)
	c := &coarse{start: func(*coarse) { t.Error("the reader must not start a second ticker") }}
	c.running.Store(true)
	var raced atomic.Bool
	c.beforeStop = func() {
		if raced.Swap(true) {
			return
		}
		// A reader arrives after the ticker's idle check but before it clears running:
		// it marks the clock used and, seeing running still true, starts nothing.
		c.nanos()
	}
	done := make(chan struct{})
	go func() {
		c.tick(ticks, 1)
		close(done)
	}()
	ticks <- time.Time{} // idle tick: the ticker decides to stop, and the reader races it
	ticks <- time.Time{} // received only if it kept ticking for that reader
	require.True(t, raced.Load())
	require.True(t, c.running.Load())
	ticks <- time.Time{} // now it is idle for real and stops
	<-done
	require.False(t, c.running.Load())
}

func TestFakeClock(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Time{})
	start := f.Now()
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), start)
	require.Equal(t, start.Add(time.Minute), f.Advance(time.Minute))
	require.Equal(t, start, f.Advance(-time.Minute))
	at := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Set(at)
	require.Equal(t, at, f.Now())
	require.Equal(t, at, NewFake(at).Now())
	require.IsType(t, systemClock{}, OrSystem(nil))
	require.Same(t, f, OrSystem(f))
	require.WithinDuration(t, time.Now(), System().Now(), time.Second)
}

// Issue 10 (g): with its ticker starved of CPU the coarse clock stayed at its last
// reading; a precise reading now publishes itself to every coarse reader.
func TestPreciseReadingRefreshesAStarvedCoarseClock(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(100)
	c := &coarse{start: func(*coarse) {}, now: now.Load} // the ticker never runs
	require.EqualValues(t, 100, c.nanos())
	now.Store(5_000_000)
	require.EqualValues(t, 100, c.nanos(), "stale while nothing refreshes it")
	require.EqualValues(t, 5_000_000, c.refresh())
	require.EqualValues(t, 5_000_000, c.nanos())
	now.Store(4_000_000) // a precise reading never moves coarse time backwards
	require.EqualValues(t, 5_000_000, c.refresh())
}

// A Fake declared rather than made by NewFake reads the zero time and moves from it
// (Now takes no lock and reads a pointer that only NewFake, Advance and Set store).
func TestZeroFakeStartsAtTheZeroTime(t *testing.T) {
	var f Fake
	if got := f.Now(); !got.IsZero() {
		t.Fatalf("Now = %v, want the zero time", got)
	}
	if got, want := f.Advance(time.Second), (time.Time{}).Add(time.Second); !got.Equal(want) || !f.Now().Equal(want) {
		t.Fatalf("Advance = %v, Now = %v, want %v", got, f.Now(), want)
	}
}
