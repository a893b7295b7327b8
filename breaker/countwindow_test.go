package breaker

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

// Issue 12: a count-based window, the last WindowCalls calls whenever they were made.

func TestCountWindowHoldsTheLastCalls(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{WindowCalls: 20, MinimumCalls: 20})
	calls(t, b, 30, Success)
	require.Equal(t, Counts{Calls: 20}, b.Snapshot().Window, "only the last 20 calls")
	fc.Advance(24 * time.Hour)
	require.Equal(t, Counts{Calls: 20}, b.Snapshot().Window, "time does not slide a count window")
	calls(t, b, 9, Failure)
	require.Equal(t, Counts{Calls: 20, Failures: 9}, b.Snapshot().Window)
	require.Equal(t, Closed, b.State())
	call(t, b, Failure) // 10 failures of the last 20 calls
	require.Equal(t, Open, b.State())
	require.Equal(t, "closed->open: failure rate 50% over 20 calls ≥ 50%", rec.reasons()[0])
}

func TestCountWindowFailuresLeaveAsCallsArrive(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{WindowCalls: 10, MinimumCalls: 10, FailureRateThreshold: 0.6})
	calls(t, b, 5, Failure)
	calls(t, b, 5, Success)
	require.Equal(t, Counts{Calls: 10, Failures: 5}, b.Snapshot().Window)
	calls(t, b, 4, Success) // pushes out four of the five failures
	require.Equal(t, Counts{Calls: 10, Failures: 1}, b.Snapshot().Window)
	calls(t, b, 10, Success)
	require.Equal(t, Counts{Calls: 10}, b.Snapshot().Window)
}

func TestCountWindowVolumeGateIsAtMostItsSize(t *testing.T) {
	t.Parallel()
	// MinimumCalls defaults to 20, more than the window can hold: the gate is 4.
	b, _, _ := newTest(t, Policy{WindowCalls: 4})
	call(t, b, Failure)
	call(t, b, Success)
	call(t, b, Success)
	require.Equal(t, Closed, b.State())
	call(t, b, Failure) // 2 of 4, reached by a failure
	require.Equal(t, Open, b.State())

	b, _, _ = newTest(t, Policy{WindowCalls: 4})
	calls(t, b, 2, Failure)
	call(t, b, Success)
	require.Equal(t, Closed, b.State())
	call(t, b, Success) // 2 of 4, reached by a success
	require.Equal(t, Open, b.State())
}

func TestCountWindowSlowCalls(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{WindowCalls: 4, SlowCallThreshold: time.Second, SlowCallRateThreshold: 0.75})
	for range 3 {
		p, err := b.Allow()
		require.NoError(t, err)
		fc.Advance(time.Second)
		p.Success()
	}
	require.Equal(t, Counts{Calls: 3, SlowCalls: 3}, b.Snapshot().Window)
	call(t, b, Success)
	require.Equal(t, Open, b.State(), "3 slow of the last 4")
}

func TestCountWindowConcurrentSuccessesAreNotLost(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "cw", Clock: fc, Policy: Policy{WindowCalls: 10000}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				p, err := b.Allow()
				if err != nil {
					t.Error(err)
					return
				}
				p.Success()
				if fc.Now().Nanosecond()%7 == 0 {
					b.Snapshot() // folds under the reporters
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			fc.Advance(time.Millisecond)
		}
	})
	wg.Wait()
	require.Equal(t, Counts{Calls: 8000}, b.Snapshot().Window)
}

func TestCountWindowResetAndValidation(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{WindowCalls: 5, MinimumCalls: 5})
	calls(t, b, 3, Failure)
	b.Reset("")
	require.Equal(t, Counts{}, b.Snapshot().Window)
	calls(t, b, 4, Success)
	call(t, b, Failure)
	require.Equal(t, Counts{Calls: 5, Failures: 1}, b.Snapshot().Window)

	_, err := New(Config{Name: "x", Policy: Policy{WindowCalls: 10001}})
	require.ErrorContains(t, err, "breaker: Policy.WindowCalls = 10001: must be at most 10000")
	b = MustNew(Config{Name: "x", Policy: Policy{WindowCalls: -1}})
	require.Equal(t, time.Minute, b.Policy().Window, "negative: the time-based window")
}

func BenchmarkClosedAllowSuccessCountWindow(b *testing.B) {
	br := MustNew(Config{Name: "bench", Policy: Policy{WindowCalls: 100}})
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Success()
	}
}
