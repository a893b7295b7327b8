package callbacks

import (
	"context"
	"sync"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Hops: a sub-agent called as a tool (AgentTool) runs in a nested runner, so each of
// its runs is an invocation of its own and it answers in words. Two rules keep the
// breaker and the retry budget whole across that hop.
//
// One budget across hops. The nested runs' calls are tracked as operations of the
// outermost invocation (scope.root), so the same tool with the same arguments, called
// by two sub-agents or by the same sub-agent again when the root model re-issues it,
// is one logical operation: its later attempts are retries, charged to the
// dependency's retry budget. An agent tool's call whose nested calls failed or were
// refused is itself FAILED (scopedTool.Run marks it, afterTool classifies it), with a
// neutral verdict: the inner breaker has the evidence, and the root model's re-issue is
// the outer operation's next attempt, not new work.
//
// No oscillation. An agent tool keyed to a dependency its own inner calls use would
// otherwise take the half-open probe, see its inner call refused, hear the sub-agent
// answer in words, and report a success that closes the breaker on a dead dependency.
// Such a call is transparent on that dependency: it is refused while the breaker is
// open, but it never takes the probe (the inner call does), holds no bulkhead slot
// (its inner call needs one) and never reports an outcome to that breaker.

// innerFailure is one failed or refused call of a nested run.
type innerFailure struct {
	dep   string
	class classify.Class
	// retryable says a later attempt could succeed: a counted failure that looked
	// transient. A refusal (open breaker, spent budget) is not, until its reason ends.
	retryable bool
}

// scopeOf returns the agent-tool scope ctx runs in, or nil.
func scopeOf(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

// trackID is the invocation whose operations a call of inv belongs to: the outermost
// run's for a call inside an agent tool, else inv's own.
func trackID(inv *invocation) string {
	if s := inv.scope; s != nil && s.root != "" {
		return s.root
	}
	return inv.id
}

// noteInner records a nested call's dependency on every agent tool its invocation runs
// under (so their calls know which dependencies they reach) and, when f is set, its
// failure. Outside an agent tool it does nothing and costs a nil check.
func noteInner(inv *invocation, dep string, f *innerFailure) {
	if inv == nil {
		return
	}
	noteScope(inv.scope, dep, f)
}

// noteScope is noteInner for the scope chain from s up.
func noteScope(s *scope, dep string, f *innerFailure) {
	for ; s != nil; s = s.parent {
		if s.owner != nil {
			s.owner.reaches(dep)
		}
		if f != nil {
			s.mu.Lock()
			if len(s.failed) < 8 { // the first few say what happened; a loop adds nothing
				s.failed = append(s.failed, *f)
			}
			s.mu.Unlock()
		}
	}
}

// innerDeps is the set of dependencies an agent tool's nested calls reach, learned
// from its calls and seeded by Build from its agent's tools.
type innerDeps struct{ m sync.Map } // dependency -> struct{}

func (s *scopedTool) reaches(dep string) {
	if _, ok := s.deps.m.Load(dep); !ok {
		s.deps.m.Store(dep, struct{}{})
	}
}

// guards reports whether the agent tool's nested calls reach dep.
func (s *scopedTool) guards(dep string) bool {
	_, ok := s.deps.m.Load(dep)
	return ok
}

// transparentAllow admits an agent tool's call on a dependency its inner calls guard:
// as an ordinary call while the breaker admits calls, refused while it is open, and
// let through without a permit where Allow would hand it the probe, so that the inner
// call takes the probe and its outcome decides. It allocates nothing while the breaker
// is closed.
func transparentAllow(b *breaker.Breaker) (breaker.Permit, error) {
	p, err := b.AllowNoProbe()
	if err == nil {
		return p, nil
	}
	if oe, ok := err.(*breaker.OpenError); ok && oe.WaitsForProbe && !b.HasProber() {
		// With a prober attached the probe is the prober's and the inner call would be
		// refused as well: refusing here spares the sub-agent's model a turn.
		return breaker.Permit{}, nil
	}
	return p, err
}

// markInner records on the agent tool's own call (ctx is its tool context) the first
// failure of its nested runs, for afterTool to classify the call by.
func (c *Callbacks) markInner(ctx agent.Context, sc *scope) {
	sc.mu.Lock()
	var f *innerFailure
	if len(sc.failed) > 0 {
		first := sc.failed[0]
		f = &first
	}
	sc.mu.Unlock()
	if f == nil {
		return
	}
	inv := c.invocation(ctx, false)
	if inv == nil {
		return
	}
	inv.mu.Lock()
	if cl := inv.calls.get(keyOf(ctx)); cl != nil && cl.inner == nil {
		cl.inner = f
	}
	inv.mu.Unlock()
}

// innerClassification is the classification of an agent tool's call that answered
// (in words) although a nested call failed: FAILED, with the inner failure's class,
// and neutral, since the inner call's breaker has already judged it.
func innerClassification(f *innerFailure) classify.Classification {
	return classify.Classification{Outcome: classify.Failed, Class: f.class, Verdict: classify.Neutral, Retryable: f.retryable}
}

// RetryRefused returns why repeating a failed call of tool with args, in the
// invocation with ID invocationID, would be refused now, or "" when it may go. It
// charges and records nothing. The reasons:
//
//   - retry.ReasonBreakerOpen: the tool's breaker refuses calls (open, half-open or
//     forced open). A repeat would be answered locally; the probe is left to a call
//     that is not a repeat.
//   - retry.ReasonUnknownOutcome: the tool is in Config.SideEffects.MutatingTools and
//     its last attempt ended UNKNOWN (it may have been applied).
//   - with Config.SideEffects.Retry, any reason the call's operation would refuse its
//     next attempt for: its attempts, deadline or the dependency's retry budget are
//     spent (retry.ReasonBudgetExhausted), or it ended otherwise.
//
// A scheduler that repeats calls itself (adk-go's workflow retries, package
// workflowguard) asks it before each repeat, so that its retries obey the same rules
// as the model's re-issues.
func (c *Callbacks) RetryRefused(invocationID, tool string, args map[string]any) retry.Reason {
	name := redact.RepairName(tool)
	if b, err := c.deps.ForTool(name); err == nil && b != nil && !b.State().Admits() {
		return retry.ReasonBreakerOpen
	}
	r := c.cfg.SideEffects.Retry
	if r == nil {
		return ""
	}
	key, err := retry.OperationKey(name, args)
	if err != nil {
		return ""
	}
	run := r.Tracked(invocationID, key)
	if run == nil {
		return ""
	}
	if c.mutating[name] && run.Result().Last.Outcome == classify.Unknown {
		return retry.ReasonUnknownOutcome
	}
	switch why := run.NextRefusal(); why {
	case retry.ReasonSucceeded, retry.ReasonInFlight:
		return "" // a success makes the next call new work; in flight: nothing to repeat yet
	default:
		return why
	}
}
