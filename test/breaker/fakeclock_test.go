package breaker_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// TestFakeClockConcurrentNowAndAdvance checks clock.Fake's promise "It is safe for
// concurrent use" (Now lock-free, Advance and Set under a lock), and Advance's "moves
// the clock forward by d ... and returns the new time":
//   - readers calling Now while writers Advance never see the time go backwards when
//     every Advance is positive, nor outside [start, final];
//   - every Advance returns a distinct time (each moves the clock forward from where
//     the previous one left it), later than the writer's previous one;
//   - the final time is start plus the sum of all advances: none is lost.
//
// A lost update (two Advances reading the same base) makes the final time short of the
// sum and two Advances return the same time; a torn or unsynchronised read of the
// time shows as a reader going backwards, a time outside the range, or a report from
// the race detector (run with -race).
func TestFakeClockConcurrentNowAndAdvance(t *testing.T) {
	start := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	if got := f.Now(); !got.Equal(start) {
		t.Fatalf("NewFake(%v).Now() = %v", start, got)
	}

	const (
		readers          = 6
		writers          = 4
		advancesPerWrite = 2000
	)
	var (
		stop     atomic.Bool
		rwg, wwg sync.WaitGroup
		total    atomic.Int64 // sum of advances, in nanoseconds
		returned = make([][]time.Time, writers)
		readErr  = make([]error, readers)
		reads    = make([][]time.Time, readers) // every reader's readings, for the range check
	)
	for r := 0; r < readers; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			prev := f.Now()
			seen := []time.Time{prev}
			for !stop.Load() {
				now := f.Now()
				if now.Before(prev) {
					readErr[r] = fmt.Errorf("reader %d: Now went backwards from %v to %v", r, prev, now)
					return
				}
				if !now.Equal(prev) {
					seen = append(seen, now)
				}
				prev = now
			}
			reads[r] = seen
		}()
	}
	for w := 0; w < writers; w++ {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			out := make([]time.Time, 0, advancesPerWrite)
			for i := 0; i < advancesPerWrite; i++ {
				// Durations from 1ns to a few hours, so that lost or merged updates show.
				d := time.Duration(1 + rng.Int64N(int64(3*time.Hour)))
				total.Add(int64(d))
				out = append(out, f.Advance(d))
			}
			returned[w] = out
		}()
	}
	wwg.Wait()
	stop.Store(true)
	rwg.Wait()

	for _, err := range readErr {
		if err != nil {
			t.Error(err)
		}
	}
	final := start.Add(time.Duration(total.Load()))
	if got := f.Now(); !got.Equal(final) {
		t.Fatalf("after %d concurrent Advances: Now() = %v, want start + sum of advances = %v (off by %v)",
			writers*advancesPerWrite, got, final, final.Sub(got))
	}

	var all []time.Time
	for w, out := range returned {
		for i, tm := range out {
			if !tm.After(start) || tm.After(final) {
				t.Fatalf("writer %d: Advance #%d returned %v, outside (start, final] = (%v, %v]", w, i, tm, start, final)
			}
			if i > 0 && !tm.After(out[i-1]) {
				t.Fatalf("writer %d: Advance #%d returned %v, not after its previous %v", w, i, tm, out[i-1])
			}
		}
		all = append(all, out...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	for i := 1; i < len(all); i++ {
		if all[i].Equal(all[i-1]) {
			t.Fatalf("two positive Advances returned the same time %v: one of them was lost", all[i])
		}
	}
	if !all[len(all)-1].Equal(final) {
		t.Fatalf("the latest Advance returned %v, want the final time %v", all[len(all)-1], final)
	}
	// Every reading is a time the clock actually held: start or one returned by Advance.
	held := make(map[int64]bool, len(all)+1)
	held[start.UnixNano()] = true
	for _, tm := range all {
		held[tm.UnixNano()] = true
	}
	for r, seen := range reads {
		for _, tm := range seen {
			if !held[tm.UnixNano()] {
				t.Fatalf("reader %d saw %v, a time the clock never held (torn read?)", r, tm)
			}
		}
	}
}
