package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/internal/toolwrap"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Toolset is an MCP tool set guarded as one dependency (see the package doc). It is a
// tool.Toolset for llmagent.Config.Toolsets. It is safe for concurrent use.
type Toolset struct {
	dep         string
	cb          *callbacks.Callbacks
	deps        *dependencymap.Map
	breaker     *breaker.Breaker
	inner       tool.Toolset
	timeout     time.Duration
	listTimeout time.Duration
	log         *slog.Logger
	notice      *unavailableNotice
	transport   *trackTransport

	list atomic.Pointer[listing] // the last good listing; nil until one succeeds
	mu   sync.Mutex              // serialises building a new listing

	lists, listFailures, listSkipped atomic.Int64
}

// listing is one good listing: the tools offered to the model, in the server's order.
// It is immutable once published.
type listing struct {
	tools  []tool.Tool
	byName map[string]*guardedTool
}

// New builds the MCP tool set of cfg.Toolset with its transport guarded and returns it
// guarded as cfg.Dependency. It does not contact the server: the first listing happens
// when the first turn starts, as with mcptoolset.
func New(cfg Config) (*Toolset, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	deps := cfg.Callbacks.Dependencies()
	if err := deps.AddTools(cfg.Dependency); err != nil {
		return nil, fmt.Errorf("mcpguard: Config.Dependency = %q: %w", cfg.Dependency, err)
	}
	b, _ := deps.Get(cfg.Dependency)
	tcfg, tr, err := guardTransport(cfg.Toolset)
	if err != nil {
		return nil, err
	}
	tcfg.Client = keyClient(tcfg.Client)
	inner, err := mcptoolset.New(tcfg)
	if err != nil {
		return nil, fmt.Errorf("mcpguard: mcptoolset: %w", err)
	}
	return &Toolset{
		dep: cfg.Dependency, cb: cfg.Callbacks, deps: deps, breaker: b, inner: inner,
		timeout: cfg.Timeout, listTimeout: cfg.ListTimeout, log: cfg.Logger,
		notice: newNotice(cfg.Dependency), transport: tr,
	}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Toolset {
	ts, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return ts
}

// Name implements tool.Toolset.
func (g *Toolset) Name() string { return g.inner.Name() }

// Close ends the tool set's connections to the server (and, for a stdio server, the
// server process), so that no goroutine of the MCP session outlives the agent; adk-go
// has no hook that would do it. After Close nothing more is sent: a call fails with
// ErrClosed (FAILED_BEFORE_SEND, not counted), and a listing offers the last list
// without counting.
func (g *Toolset) Close() error { return g.transport.close() }

// Dependency returns the dependency key of the tool set's tools.
func (g *Toolset) Dependency() string { return g.dep }

// Stats counts the tool set's listings over its life.
type Stats struct {
	// Lists is how many listings were sent to the server and succeeded.
	Lists int64
	// ListFailures is how many listings failed (each counted against the dependency).
	ListFailures int64
	// ListSkipped is how many listings were not attempted because the breaker refused.
	ListSkipped int64
}

// Stats returns the counts now.
func (g *Toolset) Stats() Stats {
	return Stats{Lists: g.lists.Load(), ListFailures: g.listFailures.Load(), ListSkipped: g.listSkipped.Load()}
}

// Tools implements tool.Toolset. adk-go calls it when a turn starts; it never returns
// an error, because adk-go would end the turn with it. See the package doc for what it
// offers when the server cannot be listed.
func (g *Toolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	// A listing is a request to the server, admitted and settled on the plugin's call
	// path as a tool call is (a stated delay holds it too); a refused listing is not a
	// call the model made, so it is logged here and reported nowhere else.
	pc := callpath.Call{Dependency: g.dep, Tool: "tools/list", InvocationID: ctx.InvocationID(), Breaker: g.breaker}
	path := g.cb.Path()
	if r, ok := path.Admit(ctx, &pc); !ok {
		g.listSkipped.Add(1)
		g.log.LogAttrs(ctx, slog.LevelInfo, "mcpguard: breaker open; tools not listed, the last list offered",
			slog.String("dependency", g.dep), slog.String("breaker_state", r.State.String()))
		return g.fallback(), nil
	}
	tools, err := g.listWithTimeout(ctx)
	if err != nil && (errors.Is(err, ErrClosed) || g.transport.closed.Load()) {
		path.Release(&pc) // our own doing, not the server's
		return g.fallback(), nil
	}
	if err != nil {
		cls := classify.Error(ctx, err)
		path.Settle(ctx, &pc, cls, "")
		g.listFailures.Add(1)
		g.log.LogAttrs(ctx, slog.LevelWarn, "mcpguard: listing the server's tools failed; last list offered",
			slog.String("dependency", g.dep), slog.String("outcome", cls.Outcome.String()),
			slog.String("error_class", string(cls.Class)), slog.String("verdict", cls.Verdict.String()))
		return g.fallback(), nil
	}
	// A listing that worked says nothing about whether the tools' calls work; counting
	// it as a success would dilute their failures (one listing per turn).
	path.Release(&pc)
	g.lists.Add(1)
	return g.adopt(ctx, tools), nil
}

// listWithTimeout lists the inner tool set's tools under ListTimeout.
func (g *Toolset) listWithTimeout(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	if g.listTimeout < 0 {
		return g.inner.Tools(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, g.listTimeout)
	defer cancel()
	tools, err := g.inner.Tools(&listContext{ReadonlyContext: ctx, ctx: tctx})
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = &tooltimeout.TimeoutError{Tool: "tools/list", Limit: g.listTimeout, Err: err}
	}
	return tools, err
}

// fallback is what a failed or skipped listing offers: the last good list, whose calls
// the plugin answers while the breaker refuses them, or the notice.
func (g *Toolset) fallback() []tool.Tool {
	if l := g.list.Load(); l != nil {
		return l.tools
	}
	return g.notice.tools
}

// adopt turns a listing into the tools offered: one guarded tool per name for the
// tool set's life, handed the listing's tool of its name. A listing with the same
// names in the same order as the last one returns the last slice and allocates
// nothing here; a new name is bound to the dependency first.
func (g *Toolset) adopt(ctx context.Context, tools []tool.Tool) []tool.Tool {
	if last := g.list.Load(); last != nil && last.update(tools) {
		return last.tools
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	last := g.list.Load()
	var names []string
	for _, t := range tools {
		if last == nil || last.byName[t.Name()] == nil {
			names = append(names, t.Name())
		}
	}
	var refused map[string]bool
	if err := g.deps.AddTools(g.dep, names...); err != nil {
		// A name the configuration puts under another dependency: offering it would
		// guard it with the wrong breaker, so it is left out, loudly.
		refused = map[string]bool{}
		for _, n := range names {
			if key, ok := g.deps.DependencyOf(n); !ok || key != g.dep {
				refused[n] = true
			}
		}
		g.log.LogAttrs(ctx, slog.LevelError, "mcpguard: tools left out: their names are bound elsewhere in the dependency map",
			slog.String("dependency", g.dep), slog.String("error", err.Error()))
	}
	next := &listing{tools: make([]tool.Tool, 0, len(tools)), byName: make(map[string]*guardedTool, len(tools))}
	for _, t := range tools {
		name := t.Name()
		if refused[name] || next.byName[name] != nil {
			continue
		}
		ft, ok := t.(toolwrap.Inner)
		if !ok {
			g.log.LogAttrs(ctx, slog.LevelError, "mcpguard: tool left out: it has no Declaration and Run methods",
				slog.String("dependency", g.dep), slog.String("tool", name))
			continue
		}
		var gt *guardedTool
		if last != nil {
			if gt = last.byName[name]; gt != nil && !gt.cur.set(ft) {
				gt = nil // another kind of tool under the same name: wrap it afresh
			}
		}
		if gt == nil {
			var err error
			if gt, err = newGuardedTool(ft, g.timeout, g.cb, g.transport.closed); err != nil {
				g.log.LogAttrs(ctx, slog.LevelError, "mcpguard: tool left out: it cannot be wrapped",
					slog.String("dependency", g.dep), slog.String("tool", name), slog.String("error", err.Error()))
				continue
			}
		}
		next.tools = append(next.tools, gt)
		next.byName[name] = gt
	}
	g.list.Store(next)
	return next.tools
}

// update hands l's guarded tools the tools of a new listing and reports true when the
// listing has exactly l's names, in l's order; otherwise it changes nothing.
func (l *listing) update(tools []tool.Tool) bool {
	if len(tools) != len(l.tools) {
		return false
	}
	for i, t := range tools {
		if _, ok := t.(toolwrap.Inner); !ok || l.tools[i].Name() != t.Name() {
			return false
		}
	}
	for i, t := range tools {
		if !l.tools[i].(*guardedTool).cur.set(t.(toolwrap.Inner)) {
			return false // the caller rebuilds, which wraps the odd tool afresh
		}
	}
	return true
}

// listContext is the listing's read-only context with the listing's deadline.
type listContext struct {
	agent.ReadonlyContext
	ctx context.Context
}

func (c *listContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *listContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *listContext) Err() error                  { return c.ctx.Err() }
func (c *listContext) Value(key any) any           { return c.ctx.Value(key) }

// unavailableNotice stands in for the tools of a server that could not be listed and
// has never been: it declares no tool, and tells the model, in the system
// instruction, that the dependency's tools are unavailable for this turn.
type unavailableNotice struct {
	name  string
	text  string
	tools []tool.Tool
}

func newNotice(dep string) *unavailableNotice {
	n := &unavailableNotice{
		name: "agentbreaker_unavailable_" + dep,
		text: fmt.Sprintf("The tools of %q are unavailable right now: its server could not be reached. "+
			"Do not guess their results; tell the user that this part cannot be done now and will work again later.", dep),
	}
	n.tools = []tool.Tool{n}
	return n
}

func (n *unavailableNotice) Name() string        { return n.name }
func (n *unavailableNotice) Description() string { return n.text }
func (n *unavailableNotice) IsLongRunning() bool { return false }

// ProcessRequest adds the notice to the request's system instruction, on a copy: the
// instruction's content may be shared with other requests.
func (n *unavailableNotice) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	part := genai.NewPartFromText(n.text)
	si := req.Config.SystemInstruction
	if si == nil {
		req.Config.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}}
		return nil
	}
	cp := *si
	cp.Parts = append(slices.Clip(si.Parts), part)
	req.Config.SystemInstruction = &cp
	return nil
}
