package modelfailover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// TimerClock is a clock that can also run a function once a duration has passed on
// it. When Config.Clock implements it, the attempt time bounds (AttemptTimeout,
// ChunkTimeout, CallTimeout) run on that clock, so a test with a fake clock
// decides when they fire; otherwise they run on the system's timers.
type TimerClock interface {
	clock.Clock
	// AfterFunc calls f on its own goroutine once d has passed, unless stop is
	// called first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// ErrTimeout is the sentinel every *TimeoutError unwraps to.
var ErrTimeout = errors.New("modelfailover: attempt timed out")

// Names of the time bounds, the values of TimeoutError.Bound.
const (
	BoundFirstResponse = "first_response" // Config.AttemptTimeout
	BoundChunkGap      = "chunk_gap"      // Config.ChunkTimeout
	BoundCall          = "call"           // Config.CallTimeout
)

// TimeoutError reports an attempt ended by one of the Failover's time bounds. It
// unwraps to [ErrTimeout] and to the error the model returned when it was cut.
type TimeoutError struct {
	Route string        // the route's name
	Bound string        // BoundFirstResponse, BoundChunkGap or BoundCall
	After time.Duration // the bound's value
	Err   error         // the model's error once its context was cancelled
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("modelfailover: route %s: no %s within %s", e.Route, boundWords[e.Bound], e.After)
}

// Unwrap returns [ErrTimeout] and the model's error.
func (e *TimeoutError) Unwrap() []error { return []error{ErrTimeout, e.Err} }

var boundWords = map[string]string{
	BoundFirstResponse: "first response",
	BoundChunkGap:      "next chunk",
	BoundCall:          "complete answer",
}

// bounds are the configured time bounds of an attempt; zero means none.
type bounds struct {
	first, gap, whole time.Duration
	clk               clock.Clock
}

func (b bounds) any() bool { return b.first > 0 || b.gap > 0 || b.whole > 0 }

func (b bounds) afterFunc(d time.Duration, f func()) func() bool {
	if tc, ok := b.clk.(TimerClock); ok {
		return tc.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// expiry is why a watchdog cancelled its attempt: the context's cause.
type expiry struct {
	bound string
	after time.Duration
}

func (e *expiry) Error() string { return "modelfailover: " + e.bound + " bound ran out" }

// watchdog enforces the bounds on one attempt by cancelling its context. Its
// methods are called from the attempt's goroutine; the timers fire on others.
type watchdog struct {
	b      bounds
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	stopIdle func() bool // the pending first-response or gap timer
	stopAll  func() bool // the whole-call timer
	got      bool        // a response has arrived
	done     bool
}

// watch returns the attempt's context and its watchdog. The first-response and
// whole-call timers start now.
func (b bounds) watch(ctx context.Context) (context.Context, *watchdog) {
	actx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{b: b, cancel: cancel}
	if !b.any() {
		return actx, w
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if b.whole > 0 {
		w.stopAll = b.afterFunc(b.whole, w.fire(BoundCall, b.whole))
	}
	if b.first > 0 {
		w.stopIdle = b.afterFunc(b.first, w.fire(BoundFirstResponse, b.first))
	}
	return actx, w
}

func (w *watchdog) fire(bound string, after time.Duration) func() {
	return func() { w.cancel(&expiry{bound: bound, after: after}) }
}

// received stops the idle timer: a response arrived.
func (w *watchdog) received() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = true
	if w.stopIdle != nil {
		w.stopIdle()
		w.stopIdle = nil
	}
}

// waiting starts the gap timer: the attempt waits for its next chunk. The time the
// caller held the previous chunk is not part of the gap.
func (w *watchdog) waiting() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || !w.got || w.b.gap <= 0 {
		return
	}
	if w.stopIdle != nil {
		w.stopIdle()
	}
	w.stopIdle = w.b.afterFunc(w.b.gap, w.fire(BoundChunkGap, w.b.gap))
}

// stop ends the watch: timers stop and the attempt's context is released.
func (w *watchdog) stop() {
	w.stopTimers()
	w.cancel(nil)
}

// stopTimers stops the timers and leaves the context alone.
func (w *watchdog) stopTimers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	for _, s := range []func() bool{w.stopIdle, w.stopAll} {
		if s != nil {
			s()
		}
	}
}

// expired returns the bound that cancelled the attempt, if one did.
func expired(actx context.Context) (*expiry, bool) {
	var e *expiry
	if errors.As(context.Cause(actx), &e) {
		return e, true
	}
	return nil, false
}
