package callbacks

import (
	"log/slog"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// The tool hop's admission is the call path's stages, in order: the dependency's
// stated delay, the breaker (and its probe), the throttle, the adaptive limit, the
// bulkhead and the retry orchestrator. Each stage admits the call or answers it; a
// refusal gives back what the stages before it took, in reverse order, and the
// settlement (settle) gives back the rest in reverse order once the call ends.
type stage uint8

const (
	stageHold stage = iota
	stageBreaker
	stageThrottle
	stageLimit
	stageBulkhead
	stageRetry
	stages // how many
)

// entry is one tool call on its way through the stages: the seam's inputs and
// the call being built, which becomes the invocation's once every stage admitted it.
type entry struct {
	ctx      agent.Context
	inv      *invocation
	t        tool.Tool
	args     map[string]any
	name     string
	priority throttle.Priority // the dependency map's priority for the tool
	governed bool              // the shedding throttle admitted a call of a served turn
	cl       *call
}

// admitStage runs one stage; a non-nil payload answers the call instead of its tool.
func (c *Callbacks) admitStage(s stage, a *entry) map[string]any {
	switch s {
	case stageHold:
		if r, held := c.path.Held(a.cl.dep, a.cl.breaker); held {
			return c.shortCircuit(a.ctx, a.inv, a.name, a.cl.dep, a.cl.breaker, r, a.args) // the dependency asked for a delay
		}
	case stageBreaker:
		return c.admitBreaker(a)
	case stageThrottle:
		return c.admitThrottle(a)
	case stageLimit:
		if !a.cl.transparent {
			// A transparent call takes no share of the limit, as it takes no bulkhead
			// slot: its inner calls take theirs, and their latency is the dependency's.
			var p map[string]any
			a.cl.limit, p = c.admitLimit(a.ctx, a.inv, a.name, a.cl.dep, a.cl.breaker, a.cl.permit, a.priority, a.args)
			return p // refused for concurrency, never sent: not the dependency's failure
		}
	case stageBulkhead:
		return c.admitBulkhead(a)
	case stageRetry:
		if c.cfg.SideEffects.Retry != nil {
			var p map[string]any
			a.cl.attempt, p = c.admitRetry(a.ctx, a.inv, a.name, a.cl.dep, a.cl.breaker, a.args, a.governed)
			return p // refused before the dependency was asked: its health is not in question
		}
	}
	return nil
}

// unwind gives back what the stages before s took for a call s refused, in reverse
// order. The breaker's permit is ignored (the call was never sent) unless a stage
// already reported it.
func (c *Callbacks) unwind(s stage, a *entry) {
	for s > stageHold {
		s--
		switch s {
		case stageBulkhead:
			if a.cl.bulk != nil {
				a.cl.bulk.Release()
			}
		case stageLimit:
			a.cl.limit.Release()
		case stageBreaker:
			a.cl.permit.Ignore()
		}
	}
}

// admitBreaker asks the breaker for a permit: a transparent agent tool's never takes
// the probe and is never judged; a mutation is never the probe; a refused call may be
// queued, else it is short-circuited.
func (c *Callbacks) admitBreaker(a *entry) map[string]any {
	cl, b := a.cl, a.cl.breaker
	var before breaker.State
	if c.spans != nil {
		before = b.State()
	}
	var err error
	switch {
	case cl.transparent:
		cl.permit, err = transparentAllow(b)
	case c.mutating[a.name]:
		// While the breaker is half-open (or its cooldown is over) the call is refused
		// or queued, and a read-only call of the dependency, or its prober, decides.
		cl.permit, err = b.AllowNoProbe()
	default:
		cl.permit, err = b.Allow()
	}
	if err != nil {
		c.throttleRefused(a.name, err)
		if b.Shadow() {
			// Sent anyway, without a permit: the breaker would not have let it through.
			return c.shortCircuit(a.ctx, a.inv, a.name, cl.dep, b, c.path.OpenRefusal(cl.dep, b, err), a.args)
		}
		if p := c.queue(a.ctx, a.inv, a.name, cl.dep, b, a.args); p != nil {
			return p
		}
		return c.shortCircuit(a.ctx, a.inv, a.name, cl.dep, b, c.path.OpenRefusal(cl.dep, b, err), a.args)
	}
	if c.spans != nil && b.State() != before {
		// This admission moved the breaker (its cooldown was over: it is half-open and
		// this call is the probe): the transition belongs on this call's span.
		c.observeTransition(a.ctx, cl.dep, a.name)
	}
	return nil
}

// admitThrottle asks the dependency's throttle, while it sheds, to let the call
// through. A probe is the breaker's alone to admit (its outcome still counts); a
// forced state is the operator's alone; a transparent call's inner calls are the
// throttle's to count.
func (c *Callbacks) admitThrottle(a *entry) map[string]any {
	cl := a.cl
	th := c.deps.ThrottleFor(a.name)
	a.priority = th.Priority
	if th.Throttle == nil || cl.transparent {
		return nil
	}
	probe := cl.permit.IsProbe()
	if !probe && cl.breaker.State() != breaker.Closed {
		return nil // a forced state: the operator decides alone
	}
	cl.throttle = th.Throttle // a probe's outcome still counts
	if probe || !th.Throttle.Shedding() {
		return nil
	}
	pr := c.priorityOf(a.ctx, th.Priority)
	if a.inv.served(cl.dep) {
		pr, a.governed = throttle.Critical, true
	}
	if !th.Throttle.AllowDraw(pr, a.inv.draw) {
		return c.shed(a.ctx, a.inv, a.name, cl.dep, cl.breaker, th.Throttle, pr, a.args)
	}
	return nil
}

// admitBulkhead takes a slot of the dependency's bulkhead. A transparent call takes
// none: its inner calls take theirs, and a sub-agent holding one slot while its call
// waits for another could starve itself.
func (c *Callbacks) admitBulkhead(a *entry) map[string]any {
	cl := a.cl
	if cl.transparent {
		return nil
	}
	bh, err := c.bulk.For(cl.dep)
	if err != nil {
		c.log.Warn("agentbreaker: no bulkhead for dependency; the call goes on without one", slog.String("dependency", cl.dep), slog.String("error", err.Error()))
		return nil
	}
	if bh == nil {
		return nil
	}
	if ferr := bh.TryAcquire(); ferr != nil {
		// A bulkhead held by slow calls is evidence the dependency is slow: the
		// rejection counts. One filled by a burst of quick calls is not.
		counts := c.heldBySlowCalls(cl.dep, cl.breaker, a.t, bh.Limit())
		if counts {
			cl.permit.Failure()
		}
		return c.busy(a.ctx, a.inv, a.name, cl.dep, cl.breaker, ferr, a.args, counts)
	}
	cl.bulk = bh
	return nil
}
