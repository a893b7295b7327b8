package adaptivelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/stripe"
	"github.com/agentbreaker/agentbreaker/throttle"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// fixed is a limiter whose limit never moves during a test: the fake clock never reaches the first update.
func fixed(t *testing.T, limit int) *Limiter {
	t.Helper()
	return MustNew(Config{MinLimit: 1, MaxLimit: limit, InitialLimit: limit, UpdateInterval: time.Minute, NoLoadInterval: time.Hour,
		Clock: clock.NewFake(t0)})
}

// acquireOn is acquire with the stripe chosen by the test.
func (l *Limiter) acquireOn(i int, p throttle.Priority) (Permit, error) {
	now := l.now()
	s := &l.stripes[i]
	if leased := l.leased.Load(); leased <= l.allowed[p].Load() {
		if old := s.slots.Load(); old&creditMask > 0 && s.slots.CompareAndSwap(old, old-1+inFlightOne) {
			return l.admitted(i, leased, now), nil
		}
	}
	return l.acquireSlow(now, p, s, i)
}

// A slot parked as credit on one stripe is not lost to the others: a call on another
// stripe that finds the slots leased full takes it back and is admitted, and only the
// calls in flight, not parked credit, make a refusal.
func TestCreditParkedOnAnotherStripeIsTakenBack(t *testing.T) {
	l := fixed(t, 2)
	a, err := l.acquireOn(3, throttle.Critical)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.acquireOn(3, throttle.Critical)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release() // stripe 3 keeps one credit and gives one back
	if got := l.stripes[3].slots.Load() & creditMask; got != 1 {
		t.Fatalf("stripe 3 parks %d credits, want 1", got)
	}
	var held []Permit
	for i := range 2 {
		p, err := l.acquireOn(9, throttle.Critical)
		if err != nil {
			t.Fatalf("call %d on stripe 9 refused with one slot parked on stripe 3: %v", i+1, err)
		}
		held = append(held, p)
	}
	if _, err := l.acquireOn(12, throttle.Critical); err == nil {
		t.Fatal("a third call was admitted under a limit of 2")
	}
	if got := l.InFlight(); got != 2 {
		t.Errorf("in flight %d, want 2", got)
	}
	for _, p := range held {
		p.Done()
	}
	if got, leased := l.InFlight(), l.leased.Load(); got != 0 || leased > 2 {
		t.Errorf("in flight %d and %d slots leased after every call ended; want 0 and at most 2", got, leased)
	}
}

// Parked credit never lets a call past its priority's share: a Low call (60% of the
// limit) is refused on a stripe with credit once the slots leased fill Low's share.
func TestCreditDoesNotBypassThePriorityShare(t *testing.T) {
	l := fixed(t, 10) // Low may fill 6
	var held []Permit
	for i := range 6 {
		p, err := l.acquireOn(i, throttle.Low)
		if err != nil {
			t.Fatalf("low call %d refused: %v", i+1, err)
		}
		held = append(held, p)
	}
	p, err := l.acquireOn(7, throttle.Critical)
	if err != nil {
		t.Fatal(err)
	}
	p.Release() // stripe 7 now parks a credit: 7 slots leased, 6 in flight
	if _, err := l.acquireOn(7, throttle.Low); err == nil {
		t.Fatal("a low call was admitted on parked credit with Low's share (6 of 10) in flight")
	}
	if _, err := l.acquireOn(7, throttle.Normal); err != nil {
		t.Errorf("a normal call (share 8 of 10) refused with 6 in flight: %v", err)
	}
	for _, p := range held {
		p.Done()
	}
}

// Under -race, goroutines on every stripe (processor mode forced, and stack mode)
// never have more calls in flight than the limit, counted outside the limiter.
func TestConcurrentCallsNeverPassTheLimit(t *testing.T) {
	for _, byProcessor := range []bool{false, true} {
		l := fixed(t, 5)
		l.contended.Store(byProcessor)
		var inside, worst atomic.Int64
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 300 {
					p, err := l.Acquire(throttle.Priority(1 + (g+i)%4))
					if err != nil {
						continue
					}
					n := inside.Add(1)
					for {
						w := worst.Load()
						if n <= w || worst.CompareAndSwap(w, n) {
							break
						}
					}
					inside.Add(-1)
					if i%3 == 0 {
						p.Release()
					} else {
						p.Done()
					}
				}
			}()
		}
		wg.Wait()
		if w := worst.Load(); w > 5 {
			t.Errorf("byProcessor=%v: %d calls inside at once under a limit of 5", byProcessor, w)
		}
		if n := l.InFlight(); n != 0 {
			t.Errorf("byProcessor=%v: %d in flight after every call ended", byProcessor, n)
		}
		var parked int64
		for i := range l.stripes {
			parked += int64(l.stripes[i].slots.Load() & creditMask)
		}
		if leased := l.leased.Load(); leased != parked || leased > 5 {
			t.Errorf("byProcessor=%v: %d slots leased, %d parked as credit; want them equal and at most 5", byProcessor, leased, parked)
		}
	}
}

// A stripe's packed samples are taken by an update before either field can overflow:
// a stripe whose count field is one short of the drain point is drained by its next
// sample, however far the next update is, and a latency sum near the field's room is
// drained by the sample that brings it there.
func TestSampleFieldsDrainBeforeOverflow(t *testing.T) {
	fake := clock.NewFake(t0)
	l := MustNew(Config{InitialLimit: 20, UpdateInterval: time.Minute, NoLoadInterval: time.Hour, Clock: fake})
	start := fake.Now()
	perCall := uint64(time.Millisecond) >> sampleShift
	for i := range l.stripes {
		l.stripes[i].samples.Store((drainCount-1)<<40 | (drainCount-1)*perCall)
	}
	p, err := l.AcquireAt(start, throttle.Normal)
	if err != nil {
		t.Fatal(err)
	}
	p.DoneAt(start.Add(time.Millisecond))
	if w := l.stripes[p.stripe].samples.Load(); w>>40 != 0 {
		t.Errorf("%d samples still held on the stripe that reached the drain point", w>>40)
	}
	if nl := l.NoLoad(); nl != time.Millisecond {
		t.Errorf("no-load %v after the drain, want 1ms (the update ran)", nl)
	}
	for i := range l.stripes {
		l.stripes[i].samples.Store(0)
	}
	// Calls of 17 minutes each: 2^36 units of 16ns at most per sample; eight of them
	// bring a stripe's sum to the drain point, and it never passes the field's room.
	for range 100 {
		p, err := l.AcquireAt(start, throttle.Critical)
		if err != nil {
			t.Fatal(err)
		}
		p.TimedOutAt(start.Add(17 * time.Minute))
		if w := l.stripes[p.stripe].samples.Load(); w&sampleMask > drainSum {
			t.Fatalf("latency sum field at %d, past the drain point %d", w&sampleMask, uint64(drainSum))
		}
	}
	if got := stripe.Count; got != len(l.stripes) {
		t.Fatalf("stripes %d, want %d", len(l.stripes), got)
	}
}

// "In use" is about calls in flight at one moment, whichever stripes they are on: one
// call at a time, taken in turns by 32 live goroutines (so on stripes all over), never
// has half of a limit of 20 in use, and the limit is not raised. Summing each stripe's
// own peak counted every stripe a call had passed through, and raised it.
func TestOneCallAtATimeOnManyStripesIsNotInUse(t *testing.T) {
	l := MustNew(Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second})
	type turn struct{ at time.Time }
	var turns [32]chan turn
	done := make(chan int)
	for g := range turns {
		turns[g] = make(chan turn)
		go func() {
			for tn := range turns[g] {
				p, err := l.AcquireAt(tn.at, throttle.Normal)
				if err != nil {
					t.Error(err)
					done <- -1
					continue
				}
				p.DoneAt(tn.at.Add(40 * time.Millisecond))
				done <- p.stripe
			}
		}()
	}
	stripes := map[int]bool{}
	at := t0
	for i := range 80 {
		turns[i%len(turns)] <- turn{at}
		stripes[<-done] = true
		at = at.Add(50 * time.Millisecond)
	}
	for _, c := range turns {
		close(c)
	}
	if len(stripes) < 10 {
		t.Skipf("the calls landed on %d stripes; the case needs more than half the limit", len(stripes))
	}
	if l.NoLoad() != 40*time.Millisecond || l.Limit() != 20 {
		t.Errorf("no-load %v, limit %d after one call at a time on %d stripes; want 40ms and 20 (never half in use)", l.NoLoad(), l.Limit(), len(stripes))
	}
}

// And the other way: twelve calls in flight at once, each from a goroutine of its own,
// put half of a limit of 20 in use wherever their stripes are, and a limit whose calls
// answer at the no-load latency is raised.
func TestHalfTheLimitInFlightOnManyStripesIsInUse(t *testing.T) {
	l := MustNew(Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second})
	at := t0
	for range 4 {
		var wg sync.WaitGroup
		admitted := make(chan Permit, 12)
		release := make(chan struct{})
		for range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := l.AcquireAt(at, throttle.Critical)
				if err != nil {
					t.Error(err)
					return
				}
				admitted <- p
				<-release
				p.DoneAt(at.Add(100 * time.Millisecond))
			}()
		}
		for range 12 {
			<-admitted
		}
		close(release)
		wg.Wait()
		at = at.Add(time.Second)
	}
	if l.NoLoad() != 100*time.Millisecond || l.Limit() <= 20 {
		t.Errorf("no-load %v, limit %d; want 100ms and the limit raised above 20", l.NoLoad(), l.Limit())
	}
}
