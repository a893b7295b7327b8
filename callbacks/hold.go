package callbacks

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// holds keeps, per dependency, the delay a server asked for (a Retry-After header, a
// RetryInfo detail or an in-band retry_after_seconds, as the classification found
// it). A closed breaker lets every call through, and the retry package only floors
// its own retries; without a hold, the model's re-issue of a rate-limited call two
// seconds later would reach the dependency in the middle of the delay it asked for.
//
// A hold is per dependency, not per tool or per arguments: a server that sheds load
// or ran out of quota does so for every call it receives. It only moves later, and
// it is bounded by the dependency policy's MaxRetryAfter, so a server (or a proxy in
// front of it) that asks for a day cannot take the tool away for a day. After the
// clock jumps back, a hold ends at most the stated delay later. A breaker
// forced closed by an operator ignores holds: that is the way out of a wrong one.
//
// The zero value holds nothing. It is safe for concurrent use.
type holds struct {
	any atomic.Bool // a hold was ever set: until then a call costs one atomic load
	m   sync.Map    // dependency key -> *hold
}

type hold struct {
	mu    sync.Mutex
	until int64 // c.nanos() before which calls are answered locally
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

// noteHold records the delay in cls, if any, for cl's dependency. Called when a call
// settles, whatever the breaker made of the outcome. A delay read from a refusal
// payload (FailedBeforeSend: the call never left, for example a nested agentbreaker's
// open breaker) is not the dependency's and sets nothing.
func (c *Callbacks) noteHold(cl *call, cls classify.Classification) {
	if cls.RetryAfter <= 0 || cls.Outcome == classify.FailedBeforeSend {
		return
	}
	d := min(cls.RetryAfter, cl.breaker.Policy().MaxRetryAfter)
	if d <= 0 {
		return
	}
	now := c.nanos()
	until := now + int64(d)
	v, _ := c.holds.m.LoadOrStore(cl.dep, &hold{})
	h := v.(*hold)
	h.mu.Lock()
	h.clamp(now)
	if until > h.until {
		h.until, h.span, h.class = until, int64(d), cls.Class
	}
	h.mu.Unlock()
	c.holds.any.Store(true)
}

// held answers a call locally while its dependency's hold lasts, with the
// unavailable payload and retry_after_seconds set to the time left; nil lets the call
// go on to the breaker. Nothing is asked of the breaker, the bulkhead or the retry
// budget: the call never reaches the dependency.
func (c *Callbacks) held(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, args map[string]any) map[string]any {
	if !c.holds.any.Load() {
		return nil
	}
	v, ok := c.holds.m.Load(dep)
	if !ok {
		return nil
	}
	state := b.State()
	if state == breaker.ForcedClosed {
		return nil // an operator's override lets everything through, holds included
	}
	h := v.(*hold)
	now := c.nanos()
	h.mu.Lock()
	h.clamp(now)
	left, class := time.Duration(h.until-now), h.class
	h.mu.Unlock()
	if left <= 0 {
		return nil
	}
	d := inv.tracker.ShortCircuit(dep)
	_ = ctx.State().Set(c.guard.StateKey(dep), d.Count) // a mirror for visibility; the count lives in the tracker
	in := c.payloadInfo(ctx, tool, dep, args)
	in.Class, in.RetryAfter = class, left
	in.Firm, in.ShortCircuits = d.Firm || inv.tracker.Hidden(dep), d.Count
	p := payloads.Unavailable(in)
	e := Event{Kind: EventShortCircuit, At: c.timeOf(now), Dependency: dep, Tool: tool, CallID: ctx.FunctionCallID(), InvocationID: inv.id,
		Outcome: classify.FailedBeforeSend, Class: class, Verdict: classify.Neutral,
		BreakerState: state, PolicyVersion: b.Policy().Version, ShortCircuits: d.Count}
	c.emit(ctx, e, slog.LevelInfo, "agentbreaker: the dependency asked for a delay; call answered locally until it passes",
		slog.Duration("retry_after", left))
	if c.obs != nil {
		c.observeShortCircuit(ctx, dep, tool, e.CallID, state, left)
	}
	if d.FirstFirm {
		e.Kind = EventLoopGuardFirm
		c.emit(ctx, e, slog.LevelWarn, "agentbreaker: model keeps calling a tool whose dependency asked for a delay; payload is now firm")
	}
	return p
}
