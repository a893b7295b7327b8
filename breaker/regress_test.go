package breaker

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/stretchr/testify/require"
)

// Regression tests for issue 10, one per item, named after the bug. Each failed on the
// code before the fix.

// Issue 10 (a): after an idle gap longer than the window, a success reported while
// another goroutine slid the window landed in the stripes, was folded into the expired
// bucket and cleared with it.
func TestIssue10aNoSuccessLostAfterIdleGap(t *testing.T) {
	t.Parallel()
	const rounds, goroutines = 20000, 2
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "idle", Clock: fc, Policy: Policy{Window: time.Second, Buckets: 10}})
	for r := range rounds {
		fc.Advance(2 * time.Second) // idle for longer than the window
		var start, done sync.WaitGroup
		start.Add(1)
		done.Go(func() { // a scrape slides the window at the same moment
			start.Wait()
			b.Snapshot()
		})
		for range goroutines {
			done.Go(func() {
				p, err := b.Allow()
				start.Wait()
				if err == nil {
					p.Success()
				}
			})
		}
		start.Done()
		done.Wait()
		if got := b.Snapshot().Window.Calls; got != goroutines {
			t.Fatalf("round %d: %d of %d successes in the window", r, got, goroutines)
		}
	}
}

// Issue 10 (b): a success that checked its generation just before Reset counted in the
// period after it: Reset zeroed the counters, then the success incremented them. The
// success path reads the clock between its generation check and its increment, so a
// clock that stops there pauses it exactly in that window.
func TestIssue10bStaleSuccessDoesNotLeakPastReset(t *testing.T) {
	t.Parallel()
	gc := &gateClock{Fake: clock.NewFake(time.Time{})}
	b := MustNew(Config{Name: "stale", Clock: gc})
	p, err := b.Allow()
	require.NoError(t, err)
	reached, release := gc.arm()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Success() // checks the generation, then stops in the clock read
	}()
	testwait.Recv(t, reached, "Success to reach its clock read")
	b.Reset("operator")
	close(release)
	testwait.Recv(t, done, "Success to return")
	require.Equal(t, Counts{}, b.Snapshot().Window, "a permit of the period before Reset must not count after it")
}

// gateClock is a fake clock whose next reading, once armed, stops until released.
type gateClock struct {
	*clock.Fake
	mu      sync.Mutex
	reached chan struct{}
	release chan struct{}
}

func (g *gateClock) arm() (reached, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reached, g.release = make(chan struct{}), make(chan struct{})
	return g.reached, g.release
}

func (g *gateClock) Now() time.Time {
	g.mu.Lock()
	reached, release := g.reached, g.release
	g.reached, g.release = nil, nil
	g.mu.Unlock()
	if reached != nil {
		close(reached)
		<-release
	}
	return g.Fake.Now()
}

// Issue 10 (c): a probe whose lease had run out still closed the breaker when it
// reported late, and snapshots kept counting it in flight.
func TestIssue10cLateProbeAfterLeaseDoesNotClose(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 1, ProbeLease: 5 * time.Second})
	trip(t, b)
	fc.Advance(30 * time.Second)
	probe, err := b.Allow()
	require.NoError(t, err)
	require.True(t, probe.IsProbe())
	fc.Advance(6 * time.Second) // the lease ran out; nobody called Allow since
	s := b.Snapshot()
	require.Zero(t, s.ProbesInFlight, "a lease that ran out is not in flight")
	require.EqualValues(t, 1, s.ExpiredProbes)
	probe.Success()
	require.Equal(t, HalfOpen, b.State(), "a probe that reports after its lease ran out is dropped")
	next, err := b.Allow()
	require.NoError(t, err)
	require.True(t, next.IsProbe())
	next.Success()
	require.Equal(t, Closed, b.State())
}

// Issue 10 (d): ForceClosed emptied the window, although it is documented to switch the
// breaker off without losing its numbers.
func TestIssue10dForceClosedKeepsTheWindow(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{MinimumCalls: 10})
	calls(t, b, 3, Success)
	calls(t, b, 4, Failure)
	b.ForceClosed("investigating")
	require.Equal(t, Counts{Calls: 7, Failures: 4}, b.Snapshot().Window)
	call(t, b, Failure)
	require.Equal(t, Counts{Calls: 8, Failures: 5}, b.Snapshot().Window)
}

// Issue 10 (e): the rate threshold was rounded to millionths, so 2 failures in 3 calls
// did not reach a threshold of 2/3.
func TestIssue10eTwoThirdsTrips(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{MinimumCalls: 3, FailureRateThreshold: 2.0 / 3})
	call(t, b, Success)
	call(t, b, Failure)
	require.Equal(t, Closed, b.State())
	call(t, b, Failure)
	require.Equal(t, Open, b.State(), "2 of 3 calls is 2/3")

	b, _, _ = newTest(t, Policy{MinimumCalls: 10, FailureRateThreshold: 0.1})
	calls(t, b, 9, Success)
	call(t, b, Failure)
	require.Equal(t, Open, b.State(), "1 of 10 calls is 10%")
}

// Issue 10 (f): a success that brought the window to MinimumCalls while the failure rate
// already met the threshold did not trip; only failures evaluated the gates.
func TestIssue10fSuccessReachingVolumeGateTrips(t *testing.T) {
	t.Parallel()
	b, _, rec := newTest(t, Policy{MinimumCalls: 4})
	calls(t, b, 3, Failure)
	require.Equal(t, Closed, b.State(), "3 calls are below the volume gate")
	call(t, b, Success)
	require.Equal(t, Open, b.State(), "3 failures of 4 calls meet both gates")
	require.Equal(t, "closed->open: failure rate 75% over 4 calls ≥ 50%", rec.reasons()[0])

	// The slow-call gate: a fast call that brings the window to the volume gate.
	b, fc, _ := newTest(t, Policy{MinimumCalls: 3, SlowCallThreshold: time.Second, SlowCallRateThreshold: 0.5})
	for range 2 {
		p, err := b.Allow()
		require.NoError(t, err)
		fc.Advance(2 * time.Second)
		p.Success()
	}
	require.Equal(t, Closed, b.State())
	call(t, b, Success) // fast
	require.Equal(t, Open, b.State(), "2 slow of 3 calls meet the slow-call gate")
}

// Issue 10 (h): a Retry-After in a report that did not itself trip the breaker was lost:
// a 429 "retry in 40 s" while closed, followed by a trip on a plain 503.
func TestIssue10hStatedDelayFloorsTheNextOpening(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 3})
	call(t, b, Success)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Report(Report{Verdict: Failure, RetryAfter: 40 * time.Second})
	require.Equal(t, Closed, b.State())
	fc.Advance(5 * time.Second)
	call(t, b, Failure) // a plain 503 trips it
	require.Equal(t, Open, b.State())
	require.Equal(t, 35*time.Second, b.RetryAfter(), "the 429's delay ends 40s after it, later than the 30s cooldown")

	// A late probe's delay: its report is dropped, its delay is not.
	b, fc, _ = newTest(t, Policy{MinimumCalls: 1, ProbeLease: 5 * time.Second})
	trip(t, b)
	fc.Advance(30 * time.Second)
	lost, err := b.Allow()
	require.NoError(t, err)
	fc.Advance(5 * time.Second)
	next, err := b.Allow()
	require.NoError(t, err)
	lost.Report(Report{Verdict: Failure, RetryAfter: 2 * time.Minute})
	next.Failure()
	require.Equal(t, Open, b.State())
	require.Equal(t, 2*time.Minute, b.RetryAfter())
}

// Issue 10 (i): jitter was applied after the MaxCooldown cap, so waits exceeded it.
func TestIssue10iJitterNeverExceedsMaxCooldown(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "j", Clock: fc, Rand: func() float64 { return 0.9 },
		Policy: Policy{MinimumCalls: 1, Cooldown: 10 * time.Second, MaxCooldown: 10 * time.Second, Jitter: 0.5}})
	call(t, b, Failure)
	require.Equal(t, 10*time.Second, b.RetryAfter())
}

// Issue 10 (i): bucket success counters were 32-bit: more than 2^32 successes in one
// bucket left a phantom 2^32 calls in the window once the bucket slid out.
func TestIssue10iBucketCountersDoNotWrap(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{Window: 10 * time.Second, Buckets: 10})
	b.stripes.at(3).Add(1<<32 + 5) // 2^32+5 successes on one stripe, as if counted
	fc.Advance(time.Second)        // bucket 0 ends: they are folded into it
	require.EqualValues(t, 1<<32+5, b.Snapshot().Window.Calls)
	fc.Advance(9 * time.Second) // bucket 0 slides out
	require.Equal(t, Counts{}, b.Snapshot().Window)
}

// Issue 10 (g): the coarse clock froze while its ticker could not get a CPU, because
// nothing else refreshed it. Busy hot paths now refresh it every clock.RefreshEvery
// successes or rejections on a stripe. Not parallel: it counts a package-wide counter.
func TestIssue10gBusyCallersRefreshTheCoarseClock(t *testing.T) {
	b := MustNew(Config{Name: "coarse", Policy: Policy{MinimumCalls: 1, Cooldown: time.Hour}}) // the default clock
	before := refreshes.Load()
	for range 4 * clock.RefreshEvery {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Success()
	}
	require.EqualValues(t, stripeRefreshes(b), refreshes.Load()-before, "one refresh per RefreshEvery successes on a stripe")
	require.Positive(t, refreshes.Load()-before)
	b = MustNew(Config{Name: "coarse", Policy: Policy{MinimumCalls: 1, Cooldown: time.Hour}})
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
	before = refreshes.Load()
	// Rejections are counted one in rejectionSample, for rejectionSample each: enough of
	// them that a refresh is all but certain (16 expected).
	for range 16 * clock.RefreshEvery {
		_, err := b.Allow()
		require.ErrorIs(t, err, ErrOpen)
	}
	require.EqualValues(t, stripeRefreshes(b), refreshes.Load()-before, "rejections refresh it too, so an open period ends on time")
	require.Positive(t, refreshes.Load()-before)
}

// stripeRefreshes is how many refreshes the counts on b's stripes call for.
func stripeRefreshes(b *Breaker) (n int64) {
	for i := range stripeCount {
		n += (b.stripes.at(i).Load() & countMask) / clock.RefreshEvery
	}
	return n
}

// A sampled rejection count that lands after the breaker left the state (an operator's
// Reset goes from open straight to closed) is dropped: added to the closed window's
// stripe it would pass for rejectionSample successes.
func TestLateRejectionCountIsNotASuccess(t *testing.T) {
	b := MustNew(Config{Name: "late", Policy: Policy{MinimumCalls: 1, Cooldown: time.Hour}})
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
	openSG := b.loadSG()
	b.Reset("operator")
	require.Equal(t, Closed, b.State())
	for range 2 * clock.RefreshEvery {
		b.sampledRejection(openSG) // as a rejection decided before the Reset would
	}
	require.Zero(t, b.Snapshot().Window.Calls, "the open period's rejections are not the closed window's calls")
	require.EqualValues(t, -1, b.stripes.bump(tagOf(openSG), 1))
}

// clock.System() given explicitly runs the default clock's paths: modelfailover gives
// it to its breakers, and their rejections must not each read the OS clock.
func TestSystemClockIsTheDefaultClock(t *testing.T) {
	b := MustNew(Config{Name: "system", Clock: clock.System()})
	require.Nil(t, b.clk)
	require.Equal(t, clock.CoarseBase(), b.epoch)
}
