package callbacks

import (
	"context"
	"sync"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/classify"
)

// Remote hops: a remote agent reached over A2A runs in another process, under its own
// runner and its own agentbreaker, where the caller's operations are unknown. Two
// pieces carry the one-budget rule of hops.go across that wire (package a2aguard
// speaks the wire; these are the plugin's halves):
//
//   - The caller names its operation scope (OperationScope: the outermost
//     invocation of the call) in the request; the remote service runs the task under
//     it (ServeRemote), so its calls are tracked as operations of that scope, as a
//     nested run's are under its outermost invocation. The root model's re-issue of a
//     remote agent, and a second remote agent of the same service calling the same
//     tool with the same arguments, are then the same operation's later attempts,
//     charged to the remote's retry budget.
//   - The remote service reports the first failed or refused call of the task
//     (ServeRemote's result); the caller marks the call that reached the remote
//     agent as failed (NoteInnerFailure), as an agent tool's call whose nested call
//     failed, so that the root model's re-issue is a retry of the caller's operation.
//
// A caller's scope can only make the remote treat its calls as retries: it never
// admits a call the remote's breaker, budget or attempts would refuse.

// InnerFailure is one failed or refused call that a remote agent's task made.
type InnerFailure struct {
	// Dependency is the dependency key of the call, in the remote service's map.
	Dependency string
	// Class is the failure's class.
	Class classify.Class
	// Retryable says a later attempt could succeed: a counted failure that looked
	// transient. A refusal (open breaker, spent budget) is not.
	Retryable bool
}

// maxServed bounds the callers' scopes a remote service tracks at once; the oldest
// is forgotten first. Each is also forgotten once idle for IdleInvocationTimeout.
const maxServed = 1024

// served is the set of callers' scopes whose operations the retry budget tracks, with
// when each was last used (clock nanoseconds, and an order that breaks ties).
type served struct {
	mu   sync.Mutex
	seq  uint64
	last map[string]servedAt
}

type servedAt struct {
	at  int64
	seq uint64
}

// OperationScope returns the ID of the invocation whose operations a call made in ctx
// belongs to: the outermost run's inside an agent tool built by AgentTool or Build,
// else ctx's own invocation's, or "" when ctx is not an agent context. A caller puts
// it in a request to a remote agent so that the remote tracks its calls under it
// (ServeRemote).
func (c *Callbacks) OperationScope(ctx context.Context) string {
	if s := scopeOf(ctx); s != nil && s.root != "" {
		return s.root
	}
	if ac, ok := ctx.(agent.Context); ok {
		return ac.InvocationID()
	}
	return ""
}

// ServeRemote prepares the context of one task a remote service runs for a caller:
// its calls are tracked as operations of the caller's scope (caller, as the caller's
// OperationScope put it in the request, however transformed; "" for none: the task's
// own invocation), and its failed or refused calls are collected. The returned
// function gives the first of them once the task has run. The scope is tracked until
// it has been idle for Config.IdleInvocationTimeout, or until 1024 newer scopes
// pushed it out. It is safe for concurrent use.
func (c *Callbacks) ServeRemote(ctx context.Context, caller string) (context.Context, func() (InnerFailure, bool)) {
	sc := &scope{}
	if caller != "" {
		sc.root = "a2a:" + caller
		c.served.use(c, sc.root)
	}
	done := func() (InnerFailure, bool) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if len(sc.failed) == 0 {
			return InnerFailure{}, false
		}
		f := sc.failed[0]
		return InnerFailure{Dependency: f.dep, Class: f.class, Retryable: f.retryable}, true
	}
	return &servedContext{Context: ctx, scope: sc}, done
}

// NoteInnerFailure records, on the agent-tool call ctx runs under (an AgentTool or
// Build agent tool), that a call below it failed: the remote agent it reached
// reported that one of its own calls failed (f). The agent tool's call is then
// FAILED, neutral, as when one of its nested calls fails (hops.go): the root model's
// re-issue is a retry of its operation. Outside such a call it does nothing.
func (c *Callbacks) NoteInnerFailure(ctx context.Context, f InnerFailure) {
	s := scopeOf(ctx)
	if s == nil || f.Dependency == "" {
		return
	}
	if !f.Class.Known() {
		f.Class = classify.ClassUnclassified
	}
	noteScope(s, f.Dependency, &innerFailure{dep: f.Dependency, class: f.Class, retryable: f.Retryable})
}

// use marks root as used now, forgetting the scopes idle past the timeout and, over
// maxServed, the oldest. The Retrier forgets their operations.
func (s *served) use(c *Callbacks, root string) {
	now := c.nanos()
	var drop []string
	s.mu.Lock()
	if s.last == nil {
		s.last = make(map[string]servedAt)
	}
	if _, ok := s.last[root]; !ok {
		for k, u := range s.last {
			if now-u.at >= int64(c.idle) {
				drop = append(drop, k)
				delete(s.last, k)
			}
		}
		if len(s.last) >= maxServed {
			oldest, first := "", true
			var ou servedAt
			for k, u := range s.last {
				if first || u.seq < ou.seq {
					oldest, ou, first = k, u, false
				}
			}
			drop = append(drop, oldest)
			delete(s.last, oldest)
		}
	}
	s.seq++
	s.last[root] = servedAt{at: now, seq: s.seq}
	s.mu.Unlock()
	if r := c.cfg.SideEffects.Retry; r != nil {
		for _, k := range drop {
			r.Forget(k)
		}
	}
}

// servedContext carries a served task's scope to the callbacks of its run.
type servedContext struct {
	context.Context
	scope *scope
}

func (s *servedContext) Value(key any) any {
	if _, ok := key.(scopeKey); ok {
		return s.scope
	}
	return s.Context.Value(key)
}
