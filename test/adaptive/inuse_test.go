package adaptive_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breakertest"
)

// docs/adaptive-concurrency.md, "How it decides": the limit is raised only "with at
// least half the limit in use at some moment since the last update". Turns from many
// sessions, run one after the other from goroutines of their own, each make one call
// that answers at once: never more than one call is in flight, so the fixture's limit
// of 5 is never half in use and stays 5 however many goroutines the calls came from.
// Then turns of three calls at once: half of 5, rounded up, in flight, and the limit is
// raised.
func TestALimitNobodyUsesIsNotRaisedWhateverTheGoroutines(t *testing.T) {
	f := newFixture(t)
	f.srv.Set(breakertest.Behavior{Status: 200, Body: "results"})
	ctx := context.Background()

	// 200 turns of one call, 50ms apart on the fake clock, taken in turns by 32 live
	// goroutines: ten seconds, twenty update intervals.
	var turns [32]chan string
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range turns {
		turns[g] = make(chan string)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for calls := range turns[g] {
				f.turn(t, ctx, calls)
				done <- struct{}{}
			}
		}()
	}
	for i := range 200 {
		turns[i%len(turns)] <- "web_search"
		<-done
		f.clk.Advance(50 * time.Millisecond)
	}
	for _, c := range turns {
		close(c)
	}
	wg.Wait()
	if got := f.lim.Limit(); got != initialLimit {
		t.Fatalf("limit %d after 200 calls one at a time from 32 goroutines, want the initial %d: never half of it in flight", got, initialLimit)
	}
	if got := f.srv.Requests(); got != 200 {
		t.Fatalf("%d requests reached the server, want 200", got)
	}

	// Three parallel calls a turn: half of 5 in flight at once, answering at the
	// no-load latency, and the limit is raised.
	for range 20 {
		f.turn(t, ctx, strings.Repeat("web_search ", 3))
		f.clk.Advance(500 * time.Millisecond)
	}
	if got := f.lim.Limit(); got <= initialLimit {
		t.Errorf("limit %d after turns of three calls at once, want it raised above %d", got, initialLimit)
	}
}
