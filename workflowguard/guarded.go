package workflowguard

import (
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/workflow"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// ConfigError is the error New returns for bad input.
type ConfigError = agentbreaker.ConfigError

type runnable interface {
	tool.Tool
	Run(ctx agent.Context, args any) (map[string]any, error)
}

// guarded runs one tool node's calls through the plugin's callbacks, in the order
// adk-go runs them for an agent's call (internal/llminternal/base_flow.go).
type guarded struct {
	cb       *callbacks.Callbacks
	decl     tool.Tool // the tool as configured: its name keys the dependency
	inner    runnable  // what runs: decl, or decl under a timeout
	retry    *workflow.RetryConfig
	next     func(error) bool
	asErrors bool
	counts   attempts
}

func (g *guarded) Name() string        { return g.decl.Name() }
func (g *guarded) Description() string { return g.decl.Description() }
func (g *guarded) IsLongRunning() bool { return g.decl.IsLongRunning() }

// Run is called by the tool node with a fresh tool context per activation.
func (g *guarded) Run(ctx agent.Context, input any) (out map[string]any, err error) {
	args := argsOf(input)
	t := g.decl
	if res, berr := g.cb.BeforeTool()(ctx, t, args); res != nil {
		g.counts.done(ctx, args)
		return res, nil // refused before it was sent: a result the graph can branch on
	} else if berr != nil {
		return nil, berr // the callbacks never do this; kept for a hand-written one
	}
	_, _ = g.cb.DispatchMarker()(ctx, t, args)
	out, toolErr := g.call(ctx, input)
	unknown := false
	if toolErr != nil {
		if res, _ := g.cb.OnToolError()(ctx, t, args, toolErr); res != nil {
			// The plugin answers an UNKNOWN mutation itself: "do not repeat this".
			out, unknown = res, true
		}
	}
	passErr := toolErr
	if unknown {
		passErr = nil
	}
	answer, _ := g.cb.AfterTool()(ctx, t, args, out, passErr)
	if answer == nil {
		answer = out
	}
	if toolErr == nil {
		g.counts.done(ctx, args)
		return answer, nil
	}
	e := &Error{Tool: t.Name(), Payload: answer, Err: toolErr, invocation: ctx.InvocationID(), args: args, cb: g.cb, unknownMutation: unknown}
	if d, ok := g.cb.Dependencies().DependencyOf(t.Name()); ok {
		e.Dependency = d
	} else {
		e.Dependency = t.Name()
	}
	e.Class, _ = answer[payloads.KeyErrorClass].(string)
	if g.retried(ctx, args, e) {
		return nil, e
	}
	g.counts.done(ctx, args)
	if g.asErrors || !payloads.Is(answer) {
		return nil, e
	}
	return answer, nil
}

// call runs the tool, turning a panic into an error: the callbacks admitted the call
// and must see it end.
func (g *guarded) call(ctx agent.Context, input any) (out map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("workflowguard: tool %q panicked: %v", g.decl.Name(), r)
		}
	}()
	return g.inner.Run(ctx, input)
}

// retried reports whether adk-go's scheduler will retry this failure: the node has
// attempts left and ShouldRetry (agentbreaker's rules, then the node's own predicate)
// agrees.
func (g *guarded) retried(ctx agent.Context, args map[string]any, e *Error) bool {
	if g.retry == nil || g.retry.MaxAttempts <= 1 {
		return false
	}
	failed := g.counts.fail(ctx, args)
	if failed < g.retry.MaxAttempts {
		e.retry = g.retry.ShouldRetry(e)
	}
	e.decided = true
	return e.retry
}

// attempts counts a node's failed activations per invocation and input, as adk-go's
// scheduler counts them (NodeState.Attempt), so the node knows which failure is its
// last. An entry is dropped when its activation ends with a result; a run abandoned
// between two attempts leaves one, and past maxTracked entries the table starts over
// (then a last failure may come back as the *Error instead of the payload).
type attempts struct {
	live atomic.Int64 // entries in m: while none, a call that ends touches nothing
	mu   sync.Mutex
	m    map[string]int
}

const maxTracked = 4096

func (a *attempts) init() { a.m = map[string]int{} }

func attemptKey(ctx agent.Context, args map[string]any) string {
	h, err := retry.ArgsHash(args)
	if err != nil {
		h = "?"
	}
	return ctx.InvocationID() + "\x00" + h
}

func (a *attempts) fail(ctx agent.Context, args map[string]any) int {
	k := attemptKey(ctx, args)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) >= maxTracked {
		clear(a.m)
	}
	a.m[k]++
	a.live.Store(int64(len(a.m)))
	return a.m[k]
}

// done forgets the activation's failures. A node that has not failed lately (the
// common case) pays one atomic load: no hashing of the arguments, no lock.
func (a *attempts) done(ctx agent.Context, args map[string]any) {
	if a.live.Load() == 0 {
		return
	}
	k := attemptKey(ctx, args)
	a.mu.Lock()
	delete(a.m, k)
	a.live.Store(int64(len(a.m)))
	a.mu.Unlock()
}
