package modelfailover

import (
	"context"

	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// A route whose endpoint has an adaptive concurrency limit (dependencymap.ModelEndpoint
// .Adaptive) is asked for a place after its breaker admitted the call, whether the
// Failover is the agent's model or the agent keeps its own and uses the callbacks.
// Over the limit, the route is passed over as an open one is, and the next route is
// tried: its breaker learns nothing from the refusal, which is never the endpoint's
// failure. A probe, and a breaker an operator forced, are not limited. The call's
// priority is the one set on its context with throttle.WithPriority (Normal
// otherwise). The place is given back when the call ends (finish) or the route fails
// over (turn.fail): a success is a latency sample, a timeout a sample for the limit
// only, anything else none.

// limit takes r's adaptive-limit place for the call into t, when r has a limit. It
// returns false when r is at its limit: c is then given back unjudged and r noted as
// passed over.
func (f *Failover) limit(ctx context.Context, r *route, c *callpath.Call, t *turn) bool {
	l := r.lim
	if l == nil || c.IsProbe() || r.b.State() != breaker.Closed {
		return true
	}
	pr := throttle.Normal
	if v, ok := throttle.PriorityFrom(ctx); ok && v.Valid() {
		pr = v
	}
	lp, err := l.Acquire(pr) // on the limiter's clock (the map's), as the breaker reads its own
	if err != nil && r.b.Shadow() {
		f.wouldFailOver(ctx, r, classify.ClassBulkheadFull)
		return true // sent without a place: the limit would have passed the route over
	}
	if err != nil {
		f.path.Release(c) // never sent
		t.skip(r, Cause(classify.ClassBulkheadFull))
		return false
	}
	t.endLimit(false, false) // a place left by an earlier route (none: each one ends its own)
	t.lim, t.limHeld = lp, true
	return true
}

// endLimit gives back the place t holds, if any.
func (t *turn) endLimit(ok, timedOut bool) {
	if !t.limHeld {
		return
	}
	switch {
	case ok:
		t.lim.Done()
	case timedOut:
		t.lim.TimedOut()
	default:
		t.lim.Release() // abandoned, or a failure that says nothing about latency
	}
	t.limHeld = false
}

// attemptWithin runs attempt under r's adaptive limit, when it has one. It returns
// false, as attempt does, when the next route should be tried.
func (f *Failover) attemptWithin(ctx context.Context, r *route, c *callpath.Call, req *model.LLMRequest,
	stream bool, t *turn, yield func(*model.LLMResponse, error) bool) (done bool) {
	if !f.limit(ctx, r, c, t) {
		return false
	}
	// finish or fail gives the place back; this is for a panicking model.
	defer t.endLimit(false, false)
	return f.attempt(ctx, r, c, req, stream, t, yield)
}
