package callpath

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
)

// holds keeps, per dependency, the delay a server asked for (a Retry-After header, a
// RetryInfo detail or an in-band retry_after_seconds, as the classification found
// it). A closed breaker lets every call through; without a hold, the model's re-issue
// of a rate-limited call two seconds later would reach the dependency in the middle of
// the delay it asked for.
//
// A hold is per dependency, not per tool or per arguments: a server that sheds load
// or ran out of quota does so for every call it receives. It only moves later, and it
// is bounded by the dependency policy's MaxRetryAfter, so a server (or a proxy in
// front of it) that asks for a day cannot take the dependency away for a day. After
// the clock jumps back, a hold ends at most the stated delay later. A breaker forced
// closed by an operator ignores holds: that is the way out of a wrong one.
//
// The zero value holds nothing. It is safe for concurrent use.
type holds struct {
	any atomic.Bool // a hold was ever set: until then a call costs one atomic load
	m   sync.Map    // dependency key -> *hold
}

type hold struct {
	mu    sync.Mutex
	until int64 // clock nanoseconds before which calls are answered locally
	span  int64 // the delay that set until
	class classify.Class
}

// clamp keeps the hold within the delay that set it when the clock has jumped back,
// as the breaker does with its deadlines: after a jump of five minutes back, a 30 s
// hold ends 30 s after the jump, not five and a half minutes later. Call with mu held.
func (h *hold) clamp(now int64) {
	if h.until-now > h.span {
		h.until = now + h.span
	}
}

// note records the delay d a call of dep's answer stated, with the answer's class.
func (hs *holds) note(dep string, now int64, d time.Duration, class classify.Class) {
	if d <= 0 {
		return
	}
	until := now + int64(d)
	v, _ := hs.m.LoadOrStore(dep, &hold{})
	h := v.(*hold)
	h.mu.Lock()
	h.clamp(now)
	if until > h.until {
		h.until, h.span, h.class = until, int64(d), class
	}
	h.mu.Unlock()
	hs.any.Store(true)
}

// left returns how long dep's hold still lasts at now, and the class of the answer
// that asked for it; zero when nothing holds it.
func (hs *holds) left(dep string, now int64) (time.Duration, classify.Class) {
	if !hs.any.Load() {
		return 0, ""
	}
	v, ok := hs.m.Load(dep)
	if !ok {
		return 0, ""
	}
	h := v.(*hold)
	h.mu.Lock()
	h.clamp(now)
	left, class := time.Duration(h.until-now), h.class
	h.mu.Unlock()
	if left <= 0 {
		return 0, ""
	}
	if class == "" {
		class = classify.ClassHTTP429
	}
	return left, class
}
