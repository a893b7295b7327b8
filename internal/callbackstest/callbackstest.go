package callbackstest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// Events records every event the callbacks emit. It is safe for concurrent use.
type Events struct {
	mu  sync.Mutex
	all []callbacks.Event
}

// Add records ev; it is the fixture's callbacks.Config.OnEvent.
func (e *Events) Add(ev callbacks.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

// All returns a copy of every event recorded, in order.
func (e *Events) All() []callbacks.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]callbacks.Event(nil), e.all...)
}

// Kinds returns the kinds of the events recorded, in order.
func (e *Events) Kinds() []callbacks.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []callbacks.EventKind
	for _, ev := range e.all {
		out = append(out, ev.Kind)
	}
	return out
}

// Of returns the events of kind k, in order.
func (e *Events) Of(k callbacks.EventKind) []callbacks.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []callbacks.Event
	for _, ev := range e.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// Policy is a small breaker policy for tests: it trips on 50% of 4 calls, waits 30s,
// and has no jitter so reopen times are exact.
var Policy = breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1}

// Fixture is an agent with tools guarded by agentbreaker, run through the real runner.
type Fixture struct {
	Clock   *clock.Fake          // the clock of the dependencies and the callbacks
	Deps    *dependencymap.Map   // the dependencies, with Policy as default
	CB      *callbacks.Callbacks // the callbacks under test
	Events  *Events              // every event the callbacks emitted
	Obs     *Recorder            // the Observer, unless the test set its own
	Model   *breakertest.Model   // the scripted model
	Harness *breakertest.Harness // the runner
	Session string               // the session Run uses
}

// Config is what New builds a Fixture from.
type Config struct {
	Tools []tool.Tool                                // the agent's tools
	Steps []breakertest.Step                         // the model's script
	Then  func(breakertest.Request) breakertest.Step // the model's answer once Steps run out
	Deps  map[string]dependencymap.Dependency        // the dependencies
	// Callbacks is the callbacks' Config: Dependencies, OnEvent (wrapped), Clock and
	// (if nil) Observer are filled in.
	Callbacks callbacks.Config
	Before    []*plugin.Plugin // plugins registered before agentbreaker
	After     []*plugin.Plugin // plugins registered after agentbreaker
	Marker    bool             // register the dispatch marker last
	// Agent builds the agent instead of the default llmagent "root" with Tools.
	Agent func(f *Fixture, m *breakertest.Model) agent.Agent
	// Prepare edits the callbacks' Config before New, with the fixture's clock at hand.
	Prepare func(f *Fixture, cfg *callbacks.Config)
	// ToolsOf adds tools built from the callbacks (wrappers).
	ToolsOf func(f *Fixture) []tool.Tool
}

// New builds the fixture fc describes and opens a session; it fails t on error.
func New(t *testing.T, fc Config) *Fixture {
	t.Helper()
	f := &Fixture{Clock: clock.NewFake(time.Time{}), Events: &Events{}, Obs: &Recorder{}}
	f.Deps = dependencymap.MustNew(dependencymap.Config{Default: Policy, Dependencies: fc.Deps, Clock: f.Clock})
	cfg := fc.Callbacks
	cfg.Dependencies = f.Deps
	if extra := cfg.Observability.OnEvent; extra != nil {
		cfg.Observability.OnEvent = func(e callbacks.Event) { f.Events.Add(e); extra(e) }
	} else {
		cfg.Observability.OnEvent = f.Events.Add
	}
	cfg.Clock = f.Clock
	if cfg.Observability.Observer == nil {
		cfg.Observability.Observer = f.Obs
	}
	cfg.SideEffects.TrackDispatch = cfg.SideEffects.TrackDispatch || fc.Marker
	if fc.Prepare != nil {
		fc.Prepare(f, &cfg)
	}
	f.CB = callbacks.MustNew(cfg)
	tools := fc.Tools
	if fc.ToolsOf != nil {
		tools = append(append([]tool.Tool{}, tools...), fc.ToolsOf(f)...)
	}
	f.Model = breakertest.MustNewModel(breakertest.ModelConfig{Steps: fc.Steps, Then: fc.Then})
	var a agent.Agent
	if fc.Agent != nil {
		a = fc.Agent(f, f.Model)
	} else {
		var err error
		a, err = llmagent.New(llmagent.Config{Name: "root", Model: f.Model, Tools: tools})
		require.NoError(t, err)
	}
	plugins := append(append(append([]*plugin.Plugin{}, fc.Before...), f.CB.Plugin()), fc.After...)
	if fc.Marker {
		plugins = append(plugins, f.CB.DispatchPlugin())
	}
	f.Harness = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: plugins})
	var err error
	f.Session, err = f.Harness.NewSession(context.Background())
	require.NoError(t, err)
	return f
}

// Run runs one turn with the user's text; it fails t on error.
func (f *Fixture) Run(t *testing.T, text string) *breakertest.Turn {
	t.Helper()
	turn, err := f.Harness.Run(context.Background(), f.Session, text)
	require.NoError(t, err)
	return turn
}

// Breaker returns the breaker of dependency key; it fails t if there is none.
func (f *Fixture) Breaker(t *testing.T, key string) *breaker.Breaker {
	t.Helper()
	b, ok := f.Deps.Get(key)
	require.True(t, ok, "no breaker %q", key)
	return b
}

// RequireClean asserts that nothing is held: no call in flight, no invocation state,
// no bulkhead slot taken, no probe lease out.
func (f *Fixture) RequireClean(t *testing.T) {
	t.Helper()
	s := f.CB.Stats()
	require.Zero(t, s.InFlight, "calls in flight")
	require.Zero(t, s.Invocations, "invocation states left")
	require.Zero(t, f.CB.Bulkheads().InUse(), "bulkhead slots taken")
	for _, b := range f.Deps.Breakers() {
		require.Zero(t, b.Snapshot().ProbesInFlight, "probe leases of %s", b.Name())
	}
}

// FnTool makes a function tool from a handler.
func FnTool(t *testing.T, name string, h func(agent.Context, map[string]any) (map[string]any, error)) tool.Tool {
	t.Helper()
	ft, err := functiontool.New(functiontool.Config{Name: name, Description: "Tool " + name + "."}, h)
	require.NoError(t, err)
	return ft
}

// CallsThenText is a script: call tool with args once per turn, then answer "done".
func CallsThenText(tool string) func(breakertest.Request) breakertest.Step {
	return func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call(tool, map[string]any{})
	}
}

// MustPlugin makes a plugin from cfg; it fails t on error.
func MustPlugin(t *testing.T, cfg plugin.Config) *plugin.Plugin {
	t.Helper()
	p, err := plugin.New(cfg)
	require.NoError(t, err)
	return p
}

// Trip opens b with four failures.
func Trip(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	for range 4 {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Open, b.State())
}

// Attempts records the retry orchestrator's attempt records. It is safe for concurrent use.
type Attempts struct {
	mu  sync.Mutex
	all []retry.Event
}

// Add records e; it fits the retry orchestrator's attempt hook.
func (a *Attempts) Add(_ context.Context, e retry.Event) {
	a.mu.Lock()
	a.all = append(a.all, e)
	a.mu.Unlock()
}

// List returns a copy of the records, in order.
func (a *Attempts) List() []retry.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]retry.Event(nil), a.all...)
}

// Observed is one report with what the context it came with says about the call.
type Observed[T any] struct {
	V            T      // the report
	CallID       string // the context's FunctionCallID; "" when it is no tool context
	InvocationID string // the context's InvocationID; "" when it is no tool context
}

// Recorder is an observe.Calls that keeps every report, the fixture's default Observer.
// It is safe for concurrent use: parallel calls report from their own goroutines.
type Recorder struct {
	mu       sync.Mutex
	shorts   []Observed[observe.ShortCircuit]
	calls    []Observed[observe.Call]
	rejected []Observed[string]
	other    int // BreakerEvent and RetryBudgetExhausted: the callbacks never call them
}

var _ observe.Calls = (*Recorder)(nil)

func from[T any](ctx context.Context, v T) Observed[T] {
	o := Observed[T]{V: v}
	if tc, ok := ctx.(agent.Context); ok {
		o.CallID, o.InvocationID = tc.FunctionCallID(), tc.InvocationID()
	}
	return o
}

// ShortCircuit records s.
func (r *Recorder) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	r.mu.Lock()
	r.shorts = append(r.shorts, from(ctx, s))
	r.mu.Unlock()
}

// CallOutcome records c.
func (r *Recorder) CallOutcome(ctx context.Context, c observe.Call) {
	r.mu.Lock()
	r.calls = append(r.calls, from(ctx, c))
	r.mu.Unlock()
}

// BulkheadRejected records dep.
func (r *Recorder) BulkheadRejected(ctx context.Context, dep string) {
	r.mu.Lock()
	r.rejected = append(r.rejected, from(ctx, dep))
	r.mu.Unlock()
}

// BreakerEvent counts in Other.
func (r *Recorder) BreakerEvent(breaker.Event) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

// RetryBudgetExhausted counts in Other.
func (r *Recorder) RetryBudgetExhausted(context.Context, string) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

// Recording is a copy of what a Recorder holds.
type Recording struct {
	Shorts   []Observed[observe.ShortCircuit] // ShortCircuit reports
	Calls    []Observed[observe.Call]         // CallOutcome reports
	Rejected []Observed[string]               // BulkheadRejected reports
	Other    int                              // BreakerEvent and RetryBudgetExhausted reports
}

// Snapshot returns a copy of what r holds.
func (r *Recorder) Snapshot() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Recording{slices.Clone(r.shorts), slices.Clone(r.calls), slices.Clone(r.rejected), r.other}
}
