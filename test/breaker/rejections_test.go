package breaker_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// rejectionRounds is how many times each variant races rejections against a Reset.
const rejectionRounds = 200

// rejectPolicy trips on 50% failures over at least five calls and stays open for an
// hour, so that no probe is handed out during a round: every permit a goroutine gets is
// an ordinary one granted after the operator's Reset.
func rejectPolicy() breaker.Policy {
	return breaker.Policy{
		FailureRateThreshold: 0.5,
		MinimumCalls:         5,
		Cooldown:             time.Hour,
		Jitter:               -1,
	}
}

// TestRejectionsNeverCountAcrossReset checks that rejected calls are never measured:
// Counts.Calls is "successes and failures" of calls that reported, and a rejection is
// not a call (Allow returned no permit). A breaker is made to reject (tripped by
// failures, or forced open by an operator), several goroutines call Allow in a tight
// loop, and the test's goroutine calls Reset ("closes the breaker with an empty
// window") at a random point among the rejections. The goroutines report every permit
// they get as a success and count it. Afterwards the snapshot's window must hold
// exactly those successes and no failure, and, just before the Reset, the window must
// still be what it was when the breaker started rejecting.
//
// Rejections are counted on the breaker's striped counters (clock.RefreshEvery: "The
// breaker does so for successes and rejections"), so a rejection that races the Reset
// and lands in the new period's counters as a call or a success would show here as
// more window calls than admitted successes; a Reset that leaves the old window's calls
// would show as more calls or as failures. Each round is repeated many times so that
// rejections in flight during the Reset are likely.
func TestRejectionsNeverCountAcrossReset(t *testing.T) {
	type variant struct {
		name string
		// reject puts a fresh breaker into a rejecting state and returns the state.
		reject func(t *testing.T, b *breaker.Breaker) breaker.State
	}
	trip := variant{"Trip", func(t *testing.T, b *breaker.Breaker) breaker.State {
		for i := 0; i < 5; i++ {
			p, err := b.Allow()
			if err != nil {
				t.Fatalf("closed breaker rejected a call: %v", err)
			}
			p.Failure()
		}
		return breaker.Open
	}}
	forceOpen := variant{"ForceOpen", func(t *testing.T, b *breaker.Breaker) breaker.State {
		// Some calls in the window below the gate, which ForceOpen keeps and Reset empties.
		for i := 0; i < 4; i++ {
			p, err := b.Allow()
			if err != nil {
				t.Fatalf("closed breaker rejected a call: %v", err)
			}
			if i == 0 {
				p.Failure()
			} else {
				p.Success()
			}
		}
		b.ForceOpen("black-box test")
		return breaker.ForcedOpen
	}}
	clocks := []struct {
		name string
		new  func() clock.Clock
	}{
		{"DefaultClock", func() clock.Clock { return nil }},
		{"FakeClock", func() clock.Clock { return clock.NewFake(time.Time{}) }},
	}
	for _, v := range []variant{trip, forceOpen} {
		for _, c := range clocks {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
				for round := 0; round < rejectionRounds; round++ {
					b := breaker.MustNew(breaker.Config{Name: "rej", Clock: c.new(), Policy: rejectPolicy()})
					want := v.reject(t, b)
					raceRejectionsWithReset(t, round, b, want, rng.IntN(3000))
					if t.Failed() {
						return
					}
				}
			})
		}
	}
}

// raceRejectionsWithReset runs one round on a breaker that rejects in state want: it
// resets the breaker once the racing goroutines have been rejected at least
// resetAfter times, then checks the window against the successes reported.
func raceRejectionsWithReset(t *testing.T, round int, b *breaker.Breaker, want breaker.State, resetAfter int) {
	t.Helper()
	before := b.Snapshot()
	if before.State != want {
		t.Fatalf("round %d: state %v before the race, want %v", round, before.State, want)
	}

	const goroutines = 6
	var (
		stop      atomic.Bool
		admitted  atomic.Int64
		rejected  atomic.Int64
		badReject atomic.Pointer[string]
		wg        sync.WaitGroup
	)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; !stop.Load(); i++ {
				if i%32 == 0 {
					// Yield now and then: on a machine with fewer cores than goroutines the
					// test's goroutine would otherwise wait a whole preemption slice (10ms)
					// for its turn to reset the breaker.
					runtime.Gosched()
				}
				p, err := b.Allow()
				if err != nil {
					if !errors.Is(err, breaker.ErrOpen) {
						msg := "rejection does not unwrap to ErrOpen: " + err.Error()
						badReject.CompareAndSwap(nil, &msg)
					}
					rejected.Add(1)
					continue
				}
				if p.IsProbe() {
					msg := "a probe was handed out during an hour-long cooldown"
					badReject.CompareAndSwap(nil, &msg)
				}
				p.Success()
				admitted.Add(1)
			}
		}()
	}
	finish := func() {
		stop.Store(true)
		wg.Wait()
	}

	// Let the rejections pile up, then check that none of them was measured.
	deadline := time.Now().Add(pollBound)
	for rejected.Load() < int64(resetAfter) {
		if time.Now().After(deadline) {
			finish()
			t.Fatalf("round %d: only %d rejections within %v", round, rejected.Load(), pollBound)
		}
		runtime.Gosched()
	}
	if mid := b.Snapshot(); mid.Window != before.Window || mid.State != want {
		finish()
		t.Fatalf("round %d: after %d rejections the snapshot shows state %v window %+v, want %v %+v (rejections measured?)",
			round, rejected.Load(), mid.State, mid.Window, want, before.Window)
	}
	if n := admitted.Load(); n != 0 {
		finish()
		t.Fatalf("round %d: %s breaker admitted %d calls before the Reset", round, want, n)
	}

	b.Reset("black-box test")

	// Let the goroutines run on the closed breaker for a while, rejections of the
	// period before the Reset possibly still in flight.
	deadline = time.Now().Add(pollBound)
	for admitted.Load() < 300 {
		if time.Now().After(deadline) {
			finish()
			t.Fatalf("round %d: only %d calls admitted within %v of the Reset", round, admitted.Load(), pollBound)
		}
		runtime.Gosched()
	}
	finish()

	if msg := badReject.Load(); msg != nil {
		t.Fatalf("round %d: %s", round, *msg)
	}
	after := b.Snapshot()
	wantWindow := breaker.Counts{Calls: admitted.Load()}
	if after.State != breaker.Closed || after.Window != wantWindow {
		t.Fatalf("round %d: after the Reset %d calls were admitted and reported as successes (%d rejections), "+
			"but the snapshot shows state %v window %+v, want closed %+v",
			round, admitted.Load(), rejected.Load(), after.State, after.Window, wantWindow)
	}
}
