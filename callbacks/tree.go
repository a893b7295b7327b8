package callbacks

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"
	"google.golang.org/genai"
)

// Instrument returns a copy of cfg with agentbreaker's callbacks installed at agent
// level: first among the before-tool, after-tool, on-error and before-model callbacks,
// with the dispatch marker last among the before-tool ones, and Config.Model's after
// and on-error callbacks first among the model ones.
//
// Agent-level callbacks are what reaches tools inside an agenttool sub-agent, whose
// nested runner has no plugins. On an agent that the runner plugin also covers, each
// call and model request is still handled once. Instrument a config once.
func (c *Callbacks) Instrument(cfg llmagent.Config) llmagent.Config {
	cfg.BeforeToolCallbacks = append([]llmagent.BeforeToolCallback{c.BeforeTool()}, cfg.BeforeToolCallbacks...)
	cfg.BeforeToolCallbacks = append(cfg.BeforeToolCallbacks, c.DispatchMarker())
	cfg.AfterToolCallbacks = append([]llmagent.AfterToolCallback{c.AfterTool()}, cfg.AfterToolCallbacks...)
	cfg.OnToolErrorCallbacks = append([]llmagent.OnToolErrorCallback{c.OnToolError()}, cfg.OnToolErrorCallbacks...)
	cfg.BeforeModelCallbacks = append([]llmagent.BeforeModelCallback{c.BeforeModel()}, cfg.BeforeModelCallbacks...)
	if cb := c.AfterModel(); cb != nil {
		cfg.AfterModelCallbacks = append([]llmagent.AfterModelCallback{cb}, cfg.AfterModelCallbacks...)
	}
	if cb := c.OnModelError(); cb != nil {
		cfg.OnModelErrorCallbacks = append([]llmagent.OnModelErrorCallback{cb}, cfg.OnModelErrorCallbacks...)
	}
	cfg.Tools = slices.Clone(cfg.Tools)
	cfg.SubAgents = slices.Clone(cfg.SubAgents)
	return cfg
}

// Node describes one agent of a tree for Build.
type Node struct {
	// Config is the agent's configuration. Its own SubAgents and Tools are kept; Build
	// adds the ones below.
	Config llmagent.Config
	// SubAgents are built (instrumented) and appended to Config.SubAgents.
	SubAgents []Node
	// AgentTools are built (instrumented), wrapped with AgentTool and appended to
	// Config.Tools.
	AgentTools []AgentToolNode
}

// AgentToolNode is a sub-agent called as a tool.
type AgentToolNode struct {
	Node
	// Tool is passed to agenttool.New. Defaults to nil.
	Tool *agenttool.Config
}

// Build builds the agent tree of n with the callbacks installed in every agent,
// including the sub-agents that run as tools in nested runners.
func (c *Callbacks) Build(n Node) (agent.Agent, error) {
	cfg := c.Instrument(n.Config)
	for _, sub := range n.SubAgents {
		a, err := c.Build(sub)
		if err != nil {
			return nil, err
		}
		cfg.SubAgents = append(cfg.SubAgents, a)
	}
	for _, at := range n.AgentTools {
		a, err := c.Build(at.Node)
		if err != nil {
			return nil, err
		}
		st := c.AgentTool(a, at.Tool).(*scopedTool)
		// Known before the first call: the dependencies its agent's tools are listed
		// under, so that its call never takes their probe (hops.go).
		for _, dep := range c.nodeDeps(at.Node) {
			st.reaches(dep)
		}
		cfg.Tools = append(cfg.Tools, st)
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("callbacks: agent %q: %w", n.Config.Name, err)
	}
	return a, nil
}

// AgentTool returns agenttool.New(a, cfg), wrapped so that the state agentbreaker
// keeps for the sub-agent's nested runs is freed when each call returns: the nested
// runner has no plugins, so no end-of-run callback would free it. Build a with
// Instrument (or Build) so its tools are guarded.
func (c *Callbacks) AgentTool(a agent.Agent, cfg *agenttool.Config) tool.Tool {
	return &scopedTool{inner: agenttool.New(a, cfg).(runnable), c: c}
}

type runnable interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx agent.Context, args any) (map[string]any, error)
	ProcessRequest(ctx agent.Context, req *model.LLMRequest) error
}

// scopedTool runs an agent tool with a scope in its context; invocations created under
// it are freed when Run returns.
type scopedTool struct {
	inner runnable
	c     *Callbacks
	deps  innerDeps // the dependencies its nested calls reach (hops.go)
}

func (s *scopedTool) Name() string                            { return s.inner.Name() }
func (s *scopedTool) Description() string                     { return s.inner.Description() }
func (s *scopedTool) IsLongRunning() bool                     { return s.inner.IsLongRunning() }
func (s *scopedTool) Declaration() *genai.FunctionDeclaration { return s.inner.Declaration() }

// ProcessRequest packs the wrapper, so calls are dispatched to it.
func (s *scopedTool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	if err := s.inner.ProcessRequest(ctx, req); err != nil {
		return err
	}
	req.Tools[s.Name()] = s
	return nil
}

func (s *scopedTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	sc := &scope{owner: s, root: ctx.InvocationID()}
	if parent := scopeOf(ctx); parent != nil {
		sc.parent = parent
		if parent.root != "" { // a served remote task without a caller's scope has none
			sc.root = parent.root
		}
	}
	defer func() {
		sc.mu.Lock()
		ids := sc.ids
		sc.ids = nil
		sc.mu.Unlock()
		for _, id := range ids {
			s.c.free(context.WithoutCancel(ctx), id)
		}
	}()
	out, err := s.inner.Run(&scopedContext{Context: ctx, scope: sc}, args)
	s.c.markInner(ctx, sc)
	if r := s.c.cfg.SideEffects.Retry; r != nil && sc.parent == nil && s.c.invs.load(sc.root) == nil {
		// The outer run keeps no state here (its agent is not instrumented and the
		// plugin is not registered), so no end of run would forget the operations
		// its nested runs tracked under it: forget them now.
		r.Forget(sc.root)
	}
	return out, err
}

// nodeDeps lists the dependencies the tools of n's agent, and of the agents below it,
// are listed under in the dependency map.
func (c *Callbacks) nodeDeps(n Node) []string {
	var out []string
	for _, t := range n.Config.Tools {
		if dep, ok := c.deps.DependencyOf(t.Name()); ok {
			out = append(out, dep)
		}
	}
	for _, sub := range n.SubAgents {
		out = append(out, c.nodeDeps(sub)...)
	}
	for _, at := range n.AgentTools {
		out = append(out, c.nodeDeps(at.Node)...)
	}
	return out
}

// scopedContext carries a scope to the callbacks of the nested runs.
type scopedContext struct {
	agent.Context
	scope *scope
}

func (s *scopedContext) Value(key any) any {
	if _, ok := key.(scopeKey); ok {
		return s.scope
	}
	return s.Context.Value(key)
}
