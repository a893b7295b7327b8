package callbacks

import (
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"

	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/docstrings"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

const defaultDocstring = docstrings.Sentence

// Callbacks guards every tool call of an agent with the dependency's circuit breaker
// and bulkhead, answers refused calls with model-readable payloads, and keeps the model
// from looping on them.
//
// Install it once as a runner plugin ([Callbacks.Plugin]), registered first; add it to
// the agents of agenttool sub-agents with [Callbacks.Build] or [Callbacks.Instrument]
// and [Callbacks.AgentTool], because their nested runner does not see runner plugins.
//
// Callbacks is safe for concurrent use: adk-go runs the calls of one model response on
// separate goroutines, and their callbacks run concurrently. Per-call and
// per-invocation state is kept inside it, keyed by the call's tool context and the
// invocation ID, and freed when the call and the run end. User hooks (OnEvent,
// Fallback) and the Observer are never called with a lock held.
type Callbacks struct {
	cfg     Config
	deps    *dependencymap.Map
	guard   *loopguard.Guard
	bulk    *bulkhead.Group
	log     *slog.Logger
	onEvent func(Event)
	obs     observe.Calls // nil: none
	spans   observe.Spans // obs, when it records transitions and sheds on spans; else nil
	clk     clock.Clock
	drawOf  func(invocationID string) uint64 // the throttles' draw (see shed.go); tests may replace it
	idle    time.Duration

	exemptNames  map[string]bool
	mutating     map[string]bool
	builtinTypes sync.Map // reflect.Type -> bool
	schemas      schemas
	toolSets     toolSets

	invs      *invTable // invocation ID -> *invocation
	live      atomic.Int64
	lastSweep atomic.Int64

	path *callpath.Path // the call path every hop runs: holds, refusals' classes, events

	configFaults sync.Map // configFaultKey -> struct{}: faults already logged (configfault.go)
	served       served   // callers' operation scopes a remote service tracks (remote.go)

	inFlight  atomic.Int64
	orphans   atomic.Int64
	panics    atomic.Int64
	misorders atomic.Int64

	plugin   *plugin.Plugin
	dispatch *plugin.Plugin
}

// New checks cfg and returns the callbacks, or an error naming the invalid field.
func New(cfg Config) (*Callbacks, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	guard, err := loopguard.New(cfg.Guidance.LoopGuard)
	if err != nil {
		return nil, fmt.Errorf("callbacks: Config.Guidance.LoopGuard: %w", err)
	}
	group, err := bulkhead.NewGroup(bulkhead.GroupConfig{
		Limits:              cfg.Bulkheads.Limits,
		Default:             cfg.Bulkheads.Default,
		SustainedRejections: cfg.Bulkheads.SustainedRejections,
		SustainedWindow:     cfg.Bulkheads.SustainedWindow,
		Clock:               cfg.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("callbacks: Config.Bulkheads: %w", err)
	}
	c := &Callbacks{
		cfg:         cfg,
		invs:        newInvTable(),
		deps:        cfg.Dependencies,
		guard:       guard,
		bulk:        group,
		log:         cfg.Observability.Logger,
		onEvent:     cfg.Observability.OnEvent,
		obs:         cfg.Observability.Observer,
		spans:       spansOf(cfg.Observability.Observer),
		clk:         cfg.Clock,
		drawOf:      drawOf,
		idle:        cfg.IdleInvocationTimeout,
		exemptNames: map[string]bool{},
		toolSets:    toolSets{seed: maphash.MakeSeed()},
		mutating:    map[string]bool{},
	}
	if !cfg.GuardBuiltinTools {
		for _, n := range builtinToolNames {
			c.exemptNames[n] = true
		}
	}
	for _, n := range cfg.ExemptTools {
		c.exemptNames[n] = true
	}
	for _, n := range cfg.SideEffects.MutatingTools {
		c.mutating[n] = true
	}
	c.path = callpath.New(c.nanos, pathSink{c})
	c.lastSweep.Store(c.nanos())
	pc := plugin.Config{
		Name:                cfg.Name,
		AfterRunCallback:    c.afterRun,
		BeforeModelCallback: c.beforeModel(pluginLayer),
		BeforeToolCallback:  c.beforeTool(pluginLayer),
		AfterToolCallback:   c.afterTool(pluginLayer),
		OnToolErrorCallback: c.onToolError(pluginLayer),
	}
	if cfg.Model.After != nil {
		pc.AfterModelCallback = c.afterModel
	}
	if cfg.Model.OnError != nil {
		pc.OnModelErrorCallback = c.onModelError
	}
	c.plugin, err = plugin.New(pc)
	if err != nil {
		return nil, fmt.Errorf("callbacks: plugin: %w", err)
	}
	c.dispatch, err = plugin.New(plugin.Config{Name: cfg.Name + "-dispatch", BeforeToolCallback: c.markDispatched})
	if err != nil {
		return nil, fmt.Errorf("callbacks: dispatch plugin: %w", err)
	}
	return c, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Callbacks {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Plugin returns the plugin for runner.Config.PluginConfig. Register it first, before
// any plugin that answers tool errors (adk-go's retry-and-reflect plugin, for
// example): adk-go stops at the first on-error callback that returns a result, so a
// plugin ahead of agentbreaker would hide failures from the breaker.
func (c *Callbacks) Plugin() *plugin.Plugin { return c.plugin }

// DispatchPlugin returns the marker plugin that tells agentbreaker a call really
// reached its tool. Register it last and set Config.SideEffects.TrackDispatch; see there.
func (c *Callbacks) DispatchPlugin() *plugin.Plugin { return c.dispatch }

// Dependencies returns the dependency map, for telemetry and admin pages.
func (c *Callbacks) Dependencies() *dependencymap.Map { return c.deps }

// Bulkheads returns the bulkheads, for telemetry and admin pages.
func (c *Callbacks) Bulkheads() *bulkhead.Group { return c.bulk }

// Stats counts the callbacks' state, for tests, health checks and telemetry.
type Stats struct {
	// Invocations is how many invocations have state now.
	Invocations int64
	// InFlight is how many admitted calls have not reported yet. Each holds a breaker
	// permit and, when its dependency has a bulkhead, a slot.
	InFlight int64
	// Orphans counts calls released when their run's state was freed rather than by
	// their own after-callback.
	Orphans int64
	// Panics counts recovered panics in callbacks and hooks.
	Panics int64
	// Misordered counts failures hidden by a plugin registered ahead of agentbreaker.
	Misordered int64
}

// Path returns the call path the plugin runs, for the module's other hops (package
// a2aguard's requests): their calls are admitted, settled and reported as the
// plugin's tools are.
func (c *Callbacks) Path() *callpath.Path { return c.path }

// Stats returns the counts now.
func (c *Callbacks) Stats() Stats {
	return Stats{
		Invocations: c.live.Load(),
		InFlight:    c.inFlight.Load(),
		Orphans:     c.orphans.Load(),
		Panics:      c.panics.Load(),
		Misordered:  c.misorders.Load(),
	}
}

// nanos reads the clock as monotonic nanoseconds; now is the same instant as a time.
func (c *Callbacks) nanos() int64 {
	if c.clk == nil {
		return clock.CoarseNanos()
	}
	return c.clk.Now().UnixNano()
}

func (c *Callbacks) timeOf(n int64) time.Time {
	if c.clk == nil {
		return clock.CoarseBase().Add(time.Duration(n))
	}
	return time.Unix(0, n)
}

// classifier returns the classifier for a dependency.
func (c *Callbacks) classifier(dep string) *classify.Classifier {
	if cl, ok := c.cfg.Classifiers[dep]; ok {
		return cl
	}
	return c.cfg.Classifier
}

// afterRun frees the run's state. adk-go calls it at the end of every run, also on
// error or when the caller stops early.
func (c *Callbacks) afterRun(ictx agent.InvocationContext) {
	defer c.recoverPanic(ictx, "after_run")
	c.free(ictx, ictx.InvocationID())
}

// alternatives returns the configured alternatives of a tool.
func (c *Callbacks) alternatives(tool string) []string {
	return slices.Clone(c.cfg.Guidance.Alternatives[tool])
}

// payloadInfo gathers what a refusal payload can offer for a call.
func (c *Callbacks) payloadInfo(ctx agent.Context, tool, dep string, args map[string]any) payloads.Info {
	in := payloads.Info{Dependency: dep, Tool: tool, Alternatives: c.alternatives(tool)}
	if class, ok := c.path.Failed(dep); ok {
		in.Class = class
	}
	if c.cfg.Guidance.Cache != nil {
		if cached, ok := c.cfg.Guidance.Cache.Get(tool, args); ok {
			in.Cached = &cached
		}
	}
	if c.cfg.Guidance.Fallback != nil {
		in.Partial = c.fallback(ctx, tool, args)
	}
	return in
}

func (c *Callbacks) fallback(ctx agent.Context, tool string, args map[string]any) (partial any) {
	defer func() {
		if r := recover(); r != nil {
			partial = nil
			c.panics.Add(1)
			c.emit(ctx, Event{Kind: EventCallbackPanic, At: c.timeOf(c.nanos()), Tool: tool, Panic: r}, slog.LevelError,
				"agentbreaker: Fallback panicked", slog.Any("panic", r))
		}
	}()
	return c.cfg.Guidance.Fallback(ctx, tool, args)
}

// recoverPanic is deferred by every callback: a bug in agentbreaker or in a hook must
// not kill the process (a panicking tool callback is not recovered by adk-go).
func (c *Callbacks) recoverPanic(ctx interface{ InvocationID() string }, where string) {
	if r := recover(); r != nil {
		c.panics.Add(1)
		e := Event{Kind: EventCallbackPanic, At: c.timeOf(c.nanos()), InvocationID: ctx.InvocationID(), Panic: r}
		if c.onEvent != nil {
			c.callHook(e)
		}
		c.log.Error("agentbreaker: callback panicked; the call goes on unguarded",
			slog.String("callback", where), slog.String("request_id", e.InvocationID), slog.Any("panic", r))
	}
}
