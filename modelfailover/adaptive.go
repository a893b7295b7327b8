package modelfailover

import (
	"context"

	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// A route whose endpoint has an adaptive concurrency limit (dependencymap.ModelEndpoint
// .Adaptive) is asked for a permit after its breaker admitted the call. Over the limit,
// the route is passed over as an open one is, and the next route is tried: its
// breaker learns nothing from the refusal, which is never the endpoint's failure. A
// probe, and a breaker an operator forced, are not limited. The call's priority is the
// one set on its context with throttle.WithPriority (Normal otherwise).

// attemptWithin runs attempt under r's adaptive limit, when it has one. It returns
// false, as attempt does, when the next route should be tried.
func (f *Failover) attemptWithin(ctx context.Context, r *route, p *breaker.Permit, req *model.LLMRequest,
	stream bool, t *turn, yield func(*model.LLMResponse, error) bool) (done bool) {
	l := r.lim
	if l == nil || p.IsProbe() || r.b.State() != breaker.Closed {
		return f.attempt(ctx, r, p, req, stream, t, yield)
	}
	pr := throttle.Normal
	if v, ok := throttle.PriorityFrom(ctx); ok && v.Valid() {
		pr = v
	}
	lp, err := l.Acquire(pr) // on the limiter's clock (the map's), as the breaker reads its own
	if err != nil {
		p.Ignore() // never sent
		t.notes = append(t.notes, note{idx: r.idx, cause: Cause(classify.ClassBulkheadFull)})
		t.skipped = append(t.skipped, r.Name)
		return false
	}
	t.served, t.servedClass = 0, ""
	tried := len(t.attempts)
	defer func() {
		// Deferred so that a panicking model gives its place back too.
		switch {
		case done && (t.served == ServedPrimary || t.served == ServedFallback):
			lp.Done()
		case (done && t.servedClass == classify.ClassTimeout) ||
			(!done && len(t.attempts) > tried && t.attempts[len(t.attempts)-1].Class == classify.ClassTimeout):
			lp.TimedOut()
		default:
			lp.Release() // abandoned, or a failure that says nothing about latency
		}
	}()
	return f.attempt(ctx, r, p, req, stream, t, yield)
}
