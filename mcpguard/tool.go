package mcpguard

import (
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/internal/toolwrap"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// guardedTool is one listed MCP tool as the agent sees it: the plugin guards its calls
// by its name (bound to the dependency key), and its Run marks the calls of a mutating
// tool for the send-once guard. One value is kept per tool name for the tool set's
// life, so the plugin's caches keep hitting; each listing hands it the tool set's new
// tool of that name (with the server's current declaration), which costs no
// allocation.
type guardedTool struct {
	name    string
	cur     current        // the mcptoolset tool of the last listing
	run     toolwrap.Inner // cur, or the tooltimeout wrapper around it
	timeout time.Duration
	// keyed is set for a tool in the plugin's MutatingTools: the plugin's wrapper that
	// runs sendOnce with the call's idempotency key in its context.
	keyed  *callbacks.KeyedTool
	closed *atomic.Bool // the tool set's: set by Close
}

func newGuardedTool(t toolwrap.Inner, timeout time.Duration, cb *callbacks.Callbacks, closed *atomic.Bool) (*guardedTool, error) {
	g := &guardedTool{name: t.Name(), timeout: max(timeout, 0), closed: closed}
	g.cur.set(t)
	g.run = &g.cur
	if timeout > 0 {
		tt, err := tooltimeout.Wrap(&g.cur, tooltimeout.Config{Timeout: timeout})
		if err != nil {
			return nil, err
		}
		g.run = tt
	}
	if cb.Mutating(g.name) {
		keyed, err := cb.WithIdempotencyKey(sendOnce{g})
		if err != nil {
			return nil, err
		}
		g.keyed = keyed
	}
	return g, nil
}

func (t *guardedTool) Name() string                            { return t.name }
func (t *guardedTool) Description() string                     { return t.cur.get().Description() }
func (t *guardedTool) IsLongRunning() bool                     { return t.cur.get().IsLongRunning() }
func (t *guardedTool) Declaration() *genai.FunctionDeclaration { return t.cur.get().Declaration() }

// Timeout is the per-call timeout (0: none); the plugin reads it to tell slow calls.
func (t *guardedTool) Timeout() time.Duration { return t.timeout }

// Unwrap returns the mcptoolset tool of the last listing.
func (t *guardedTool) Unwrap() tool.Tool { return t.cur.get() }

func (t *guardedTool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	return toolwrap.ProcessRequest(ctx, req, t.cur.get(), t)
}

// Run calls the MCP tool. A mutating tool's call runs under a context that carries
// its send-once state down to the transport (one allocation) and, when the plugin has
// a Retrier, its operation's idempotency key, which the client puts in the request's
// _meta (two more); a read-only call runs under the tool context as it is and costs
// nothing here.
func (t *guardedTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	if t.closed.Load() {
		// Refused before anything could be sent, whatever the session would report
		// for its closed connection.
		return nil, ErrClosed
	}
	if t.keyed == nil {
		return t.run.Run(ctx, args)
	}
	// The plugin's wrapper finds the call by the context adk-go passed, so it runs
	// first, on ctx as it is.
	return t.keyed.Run(ctx, args)
}

// sendOnce is what the plugin's idempotency-key wrapper runs for a mutating tool: the
// call under its send-once state.
type sendOnce struct{ t *guardedTool }

func (s sendOnce) Name() string                            { return s.t.name }
func (s sendOnce) Description() string                     { return s.t.Description() }
func (s sendOnce) IsLongRunning() bool                     { return s.t.IsLongRunning() }
func (s sendOnce) Declaration() *genai.FunctionDeclaration { return s.t.Declaration() }
func (s sendOnce) Run(ctx agent.Context, args any) (map[string]any, error) {
	return s.t.run.Run(&onceContext{Context: ctx, tool: s.t.name}, args)
}

// current holds the latest listed tool of one name. An atomic.Value of an interface
// holding a pointer stores without allocating; every mcptoolset tool has the same
// concrete type, as atomic.Value requires (set refuses another).
type current struct{ v atomic.Value }

func (c *current) get() toolwrap.Inner { return c.v.Load().(toolwrap.Inner) }

// set stores t, and reports false when t's concrete type differs from the stored one.
func (c *current) set(t toolwrap.Inner) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	c.v.Store(t)
	return true
}

func (c *current) Name() string                            { return c.get().Name() }
func (c *current) Description() string                     { return c.get().Description() }
func (c *current) IsLongRunning() bool                     { return c.get().IsLongRunning() }
func (c *current) Declaration() *genai.FunctionDeclaration { return c.get().Declaration() }
func (c *current) Run(ctx agent.Context, args any) (map[string]any, error) {
	return c.get().Run(ctx, args)
}
