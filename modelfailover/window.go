package modelfailover

import (
	"sync"
	"time"
)

// WindowStats counts the calls of the last window by how they were served.
type WindowStats struct {
	// Span is the window's length (Config.ShareWindow).
	Span time.Duration
	// Calls is every call in the window; the five counts below add up to it.
	Calls, Primary, Fallback, Unavailable, Failed, Abandoned uint64
	// FallbackShare is Fallback / Calls, 0 when there were no calls. An alert on
	// it catches a fleet quietly demoted to a weaker model when no error shows.
	// It counts every call a fallback answered, including the per-call fallbacks
	// made while the primary's breaker is closed, which are never announced.
	FallbackShare float64
}

type windowCounts struct{ primary, fallback, unavailable, failed, abandoned uint64 }

// shareWindow is a rolling window cut into buckets. One mutex: it is touched
// once per model call, which costs far more than the lock.
type shareWindow struct {
	mu      sync.Mutex
	span    time.Duration
	width   time.Duration
	origin  time.Time
	head    int64 // index of the newest bucket since origin
	buckets [shareBuckets]windowCounts
}

func newShareWindow(span time.Duration, now time.Time) *shareWindow {
	return &shareWindow{span: span, width: span / shareBuckets, origin: now}
}

// advance moves the window to now, clearing the buckets that slid out. A clock
// that went back files calls in the newest bucket.
func (w *shareWindow) advance(now time.Time) {
	idx := int64(now.Sub(w.origin) / w.width)
	if idx <= w.head {
		return
	}
	for i := w.head + 1; i <= idx && i <= w.head+shareBuckets; i++ {
		w.buckets[i%shareBuckets] = windowCounts{}
	}
	w.head = idx
}

func (w *shareWindow) add(now time.Time, s ServedBy) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now)
	b := &w.buckets[w.head%shareBuckets]
	switch s {
	case ServedPrimary:
		b.primary++
	case ServedFallback:
		b.fallback++
	case ServedUnavailable:
		b.unavailable++
	case ServedFailed:
		b.failed++
	case ServedAbandoned:
		b.abandoned++
	}
}

func (w *shareWindow) stats(now time.Time) WindowStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now)
	out := WindowStats{Span: w.span}
	for _, b := range w.buckets {
		out.Primary += b.primary
		out.Fallback += b.fallback
		out.Unavailable += b.unavailable
		out.Failed += b.failed
		out.Abandoned += b.abandoned
	}
	out.Calls = out.Primary + out.Fallback + out.Unavailable + out.Failed + out.Abandoned
	if out.Calls > 0 {
		out.FallbackShare = float64(out.Fallback) / float64(out.Calls)
	}
	return out
}
