package callbacks

import (
	"errors"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// admitLimit asks dep's adaptive limit (dependencymap.Dependency.Adaptive) for a call
// the breaker and the throttle admitted. It returns the permit, or the busy payload
// when the call is over the limit for its priority. A probe is the breaker's alone to
// admit, and a breaker an operator forced decides alone: neither asks the limit.
func (c *Callbacks) admitLimit(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, permit breaker.Permit,
	fromMap throttle.Priority, args map[string]any) (adaptivelimit.Permit, map[string]any) {
	l := c.deps.Limiter(dep)
	if l == nil || permit.IsProbe() || b.State() != breaker.Closed {
		return adaptivelimit.Permit{}, nil
	}
	pr := fromMap.Norm()
	if l.PriorityMatters() {
		// Only near the limit does the priority decide; the context's and the session's
		// are looked up then, so that calls with room to spare never pay for it.
		pr = c.priorityOf(ctx, fromMap)
	}
	lp, err := l.Acquire(pr) // on the limiter's clock (the map's), as the breaker reads its own
	if err != nil {
		return adaptivelimit.Permit{}, c.limited(ctx, inv, tool, dep, b, pr, err, args)
	}
	return lp, nil
}

// limited answers a call over its dependency's adaptive limit with the bulkhead's busy
// payload. The call never left the process: the breaker learns nothing from it (the
// caller ignores its permit), so a limit that refuses can never open the breaker.
func (c *Callbacks) limited(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, pr throttle.Priority, err error, args map[string]any) map[string]any {
	r := callpath.Refusal{Control: callpath.Limited, State: breaker.Closed, Priority: pr}
	if le, ok := errors.AsType[*adaptivelimit.LimitError](err); ok {
		r.Limit = le.Limit
	}
	told := c.refuse(ctx, inv, tool, dep, b, r)
	in := c.payloadInfo(ctx, tool, dep, args)
	in.Class = classify.ClassBulkheadFull
	in.Firm, in.ShortCircuits = told.Firm, told.Count
	return payloads.Busy(in)
}

// endLimit ends a call's adaptive-limit permit: a success is a latency sample, a
// timeout a sample for the limit only, anything else (not sent, a fast failure, a
// neutral outcome) no sample at all.
func (c *Callbacks) endLimit(cl *call, cls classify.Classification, sent bool) {
	switch {
	case sent && cls.Outcome == classify.Succeeded:
		cl.limit.Done()
	case sent && cls.Class == classify.ClassTimeout:
		cl.limit.TimedOut()
	default:
		cl.limit.Release()
	}
}
