//go:build breakerhooks

package breaker

// Stress tests that stop a goroutine between two steps of a lock-free path, change the
// breaker under it, and let it go on: the interleavings the issue 10 races needed, on
// purpose rather than by luck. Run them with
//
//	go test -race -tags breakerhooks ./breaker/
//
// They are not parallel: a hook is package-wide, and sequential tests never overlap
// the package's parallel ones.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

// pauseAt stops the next goroutine that reaches p until release is called. reached is
// closed when it got there.
func pauseAt(t *testing.T, p hookPoint) (reached <-chan struct{}, release func()) {
	t.Helper()
	got, rel := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	remove := setHook(p, func() {
		if armed.CompareAndSwap(true, false) {
			close(got)
			<-rel
		}
	})
	var once sync.Once
	release = func() {
		once.Do(func() {
			remove()
			close(rel)
		})
	}
	t.Cleanup(release)
	return got, release
}

// goReport runs f on a goroutine and returns a channel closed when it returned.
func goReport(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// A success stopped between its generation check and its increment, while the breaker
// changes state under it in every way it can: it must never count in the new period.
func TestHookSuccessBetweenGenerationCheckAndIncrement(t *testing.T) {
	transitions := []struct {
		name string
		do   func(t *testing.T, b *Breaker, fc *clock.Fake)
		want State
	}{
		{"reset", func(_ *testing.T, b *Breaker, _ *clock.Fake) { b.Reset("") }, Closed},
		{"force closed", func(_ *testing.T, b *Breaker, _ *clock.Fake) { b.ForceClosed("") }, ForcedClosed},
		{"force open then reset", func(_ *testing.T, b *Breaker, _ *clock.Fake) { b.ForceOpen(""); b.Reset("") }, Closed},
		{"trip and close again", func(t *testing.T, b *Breaker, fc *clock.Fake) {
			for b.State() == Closed {
				call(t, b, Failure)
			}
			fc.Advance(b.RetryAfter())
			p, err := b.Allow()
			require.NoError(t, err)
			p.Success()
		}, Closed},
	}
	for round := range 200 {
		tr := transitions[round%len(transitions)]
		t.Run(fmt.Sprintf("%d/%s", round, tr.name), func(t *testing.T) {
			b, fc, _ := newTest(t, Policy{MinimumCalls: 2})
			calls(t, b, round%5, Success) // some successes already in the stripes
			before := b.Snapshot().Window
			p, err := b.Allow()
			require.NoError(t, err)
			reached, release := pauseAt(t, hookSuccessAfterGenCheck)
			done := goReport(p.Success)
			<-reached
			tr.do(t, b, fc)
			release()
			<-done
			require.Equal(t, tr.want, b.State())
			got := b.Snapshot().Window
			if tr.want == ForcedClosed {
				require.Equal(t, before, got, "forced closed keeps the window, without the stale success")
			} else {
				require.Equal(t, Counts{}, got, "the stale success must not count after the transition")
			}
			call(t, b, Success)
			require.Equal(t, got.Calls+1, b.Snapshot().Window.Calls, "a success of the new period counts")
		})
	}
}

// A transition stopped after it took and retagged the counters and before it published
// the new generation: successes of the old generation reported then (including
// permits granted in that gap, which still carry the old generation) are dropped, and
// nothing is lost for the new one.
func TestHookTransitionBetweenRetagAndPublish(t *testing.T) {
	for round := range 100 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			b, _, _ := newTest(t, Policy{MinimumCalls: 100})
			calls(t, b, 3, Success)
			old := make([]Permit, 1+round%4)
			for i := range old {
				p, err := b.Allow()
				require.NoError(t, err)
				old[i] = p
			}
			reached, release := pauseAt(t, hookTransitionBeforePublish)
			done := goReport(func() { b.Reset("") })
			<-reached
			// The old generation is still published: Allow grants it.
			gap, err := b.Allow()
			require.NoError(t, err)
			for i := range old {
				old[i].Success()
			}
			gap.Success()
			release()
			<-done
			require.Equal(t, Counts{}, b.Snapshot().Window, "old-generation successes in the gap are dropped")
			calls(t, b, 2, Success)
			require.Equal(t, Counts{Calls: 2}, b.Snapshot().Window)
		})
	}
}

// A slide of the window stopped after it decided to slide and before it folded the
// stripes: a success stamped before the bucket ended lands in the stripes and is folded
// into the bucket it belongs to; a success stamped after waits for the lock and is
// added after the fold. Neither is lost, and the old one leaves with its bucket.
func TestHookRotationBetweenDecisionAndFold(t *testing.T) {
	for round := range 100 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			b, fc, _ := newTest(t, Policy{Window: 10 * time.Second, Buckets: 10, MinimumCalls: 100})
			t0 := fc.Now()
			gap := time.Duration(1+round%15) * time.Second // sometimes longer than the window
			fc.Advance(gap)
			early, err := b.Allow()
			require.NoError(t, err)
			late, err := b.Allow()
			require.NoError(t, err)
			reached, release := pauseAt(t, hookRotateBeforeFold)
			scrape := goReport(func() { b.Snapshot() }) // the slide at t0+gap
			<-reached
			early.ReportAt(t0.Add(500*time.Millisecond), Report{Verdict: Success}) // inside bucket 0: lock-free
			lateDone := goReport(late.Success)                                     // at t0+gap: needs the lock
			release()
			<-scrape
			<-lateDone
			want := int64(1) // the late success
			if gap < 10*time.Second {
				want++ // bucket 0 is still in the window
			}
			require.Equal(t, want, b.Snapshot().Window.Calls)
			fc.Advance(10 * time.Second)
			require.Zero(t, b.Snapshot().Window.Calls, "both leave with their buckets")
		})
	}
}

// A rejection stopped after it loaded the open state, while the cooldown ends and a
// probe closes the breaker: when it goes on, it decides under the lock on the new state
// and is admitted as an ordinary call, never as a second probe.
func TestHookRejectionRacingRecovery(t *testing.T) {
	for round := range 100 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			b, fc, _ := newTest(t, Policy{MinimumCalls: 1})
			trip(t, b)
			fc.Advance(b.RetryAfter())
			reached, release := pauseAt(t, hookRejectAfterLoad)
			var paused Permit
			var pausedErr error
			done := goReport(func() { paused, pausedErr = b.Allow() })
			<-reached
			probe, err := b.Allow()
			require.NoError(t, err)
			require.True(t, probe.IsProbe())
			if round%2 == 0 {
				probe.Success()
			}
			release()
			<-done
			if round%2 == 0 {
				require.NoError(t, pausedErr, "the breaker closed while it waited")
				require.False(t, paused.IsProbe())
			} else {
				require.ErrorIs(t, pausedErr, ErrOpen, "the one probe is out")
			}
		})
	}
}

// Many goroutines, with a hook that yields at every point, against a model of what must
// hold whatever the interleaving: no success of an earlier period counts, none of the
// current period is lost.
func TestHookStressYieldEverywhere(t *testing.T) {
	var yields atomic.Int64
	for p := range hookPoints {
		defer setHook(p, func() {
			if yields.Add(1)%3 == 0 {
				runtime.Gosched()
			}
		})()
	}
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "stress", Clock: fc, Policy: Policy{Window: time.Hour, Buckets: 60, MinimumCalls: 1_000_000}})
	const rounds, goroutines, per = 50, 4, 200
	for r := range rounds {
		var counted atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Go(func() { // slides the window and scrapes under the reporters
			rnd := rand.New(rand.NewPCG(uint64(r), 1))
			advances := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				if advances < 30 && rnd.IntN(4) == 0 { // 30 minutes: all inside the hour
					fc.Advance(time.Minute)
					advances++
				}
				b.Snapshot()
			}
		})
		for range goroutines {
			wg.Go(func() {
				for range per {
					p, err := b.Allow()
					require.NoError(t, err)
					p.Success()
					counted.Add(1)
				}
			})
		}
		wg.Wait()
		close(stop)
		churn.Wait()
		require.Equal(t, counted.Load(), b.Snapshot().Window.Calls, "round %d: every success of this period counts once", r)
		b.Reset("next round")
	}
	require.Positive(t, yields.Load())
}
