package callbacks

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/internal/toolwrap"
	"github.com/agentbreaker/agentbreaker/retry"
)

// runnableTool is what a wrapper needs of the tool it wraps: adk-go dispatches calls
// to Run and declares the tool with Declaration.
type runnableTool = toolwrap.Inner

// KeyedTool runs a tool with its call's idempotency key in the context (see
// retry.IdempotencyKeyFrom), so that an HTTP client using the httptransport package
// sends it as a header and the dependency applies a repeated mutation at most once.
// Tool callbacks cannot change the context a tool runs with; a wrapper can. It is safe
// for concurrent use, as adk-go requires.
type KeyedTool struct {
	inner runnableTool
	cb    *Callbacks
}

// WithIdempotencyKey wraps t so that it runs with the idempotency key of the logical
// operation its call belongs to (Config.SideEffects.Retry): every attempt of the operation, the
// model's identical re-issues included, carries the same key. Without Config.SideEffects.Retry, or
// for a call these callbacks did not admit, the tool runs with its context unchanged.
//
// t must be a function tool (Declaration and Run, as functiontool, agenttool,
// mcptoolset and tooltimeout tools have). Make this wrapper the outermost one: it finds
// the call by the tool context adk-go passes to callbacks and to Run.
func (c *Callbacks) WithIdempotencyKey(t tool.Tool) (*KeyedTool, error) {
	if t == nil {
		return nil, errors.New("callbacks: WithIdempotencyKey: tool is nil")
	}
	rt, ok := t.(runnableTool)
	if !ok {
		return nil, fmt.Errorf("callbacks: WithIdempotencyKey: tool %q (%T) has no Declaration and Run methods to wrap", t.Name(), t)
	}
	return &KeyedTool{inner: rt, cb: c}, nil
}

// MustWithIdempotencyKey is WithIdempotencyKey that panics on error.
func (c *Callbacks) MustWithIdempotencyKey(t tool.Tool) *KeyedTool {
	w, err := c.WithIdempotencyKey(t)
	if err != nil {
		panic(err)
	}
	return w
}

// Name implements tool.Tool.
func (w *KeyedTool) Name() string { return w.inner.Name() }

// Description implements tool.Tool.
func (w *KeyedTool) Description() string { return w.inner.Description() }

// IsLongRunning implements tool.Tool.
func (w *KeyedTool) IsLongRunning() bool { return w.inner.IsLongRunning() }

// Declaration returns the inner tool's declaration.
func (w *KeyedTool) Declaration() *genai.FunctionDeclaration { return w.inner.Declaration() }

// Unwrap returns the wrapped tool.
func (w *KeyedTool) Unwrap() tool.Tool { return w.inner }

// ProcessRequest runs the inner tool's own request processing, then makes sure the
// wrapper, not the inner tool, is what adk-go dispatches calls to.
func (w *KeyedTool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	return toolwrap.ProcessRequest(ctx, req, w.inner, w)
}

// Run runs the inner tool, with the call's idempotency key in its context when the
// call has one.
func (w *KeyedTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	if key := w.cb.idempotencyKey(ctx); key != "" {
		return w.inner.Run(&keyedContext{Context: ctx, values: retry.WithIdempotencyKey(ctx, key)}, args)
	}
	return w.inner.Run(ctx, args)
}

// idempotencyKey returns the idempotency key of the admitted call ctx belongs to, or "".
func (c *Callbacks) idempotencyKey(ctx agent.Context) string {
	inv := c.invocation(ctx, false)
	if inv == nil {
		return ""
	}
	k := keyOf(ctx)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	cl := inv.calls.get(k)
	if cl == nil {
		// Another wrapper may have replaced the context: fall back to the call ID when
		// it names exactly one call in flight.
		for _, e := range inv.calls {
			if e.k.id != k.id {
				continue
			}
			if cl != nil {
				return ""
			}
			cl = e.cl
		}
	}
	if cl == nil || cl.attempt == nil {
		return ""
	}
	return cl.attempt.Info().IdempotencyKey
}

// keyedContext is the tool's agent.Context with the idempotency key added to its
// values; deadline and cancellation stay the tool context's own.
type keyedContext struct {
	agent.Context
	values context.Context
}

func (c *keyedContext) Value(key any) any { return c.values.Value(key) }
