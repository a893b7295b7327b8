// This file is a copy of the library's callbacks/fixture_test.go: the tests here are
// the callbacks tests that need a journal on a real database, run by the same fixture
// (less the helpers they do not use).

package callbacks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
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
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// events records every event the callbacks emit.
type events struct {
	mu  sync.Mutex
	all []callbacks.Event
}

func (e *events) add(ev callbacks.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) of(k callbacks.EventKind) []callbacks.Event {
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

// policy is a small breaker policy for tests: it trips on 50% of 4 calls, waits 30s,
// and has no jitter so reopen times are exact.
var policy = breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1}

// fixture is an agent with tools guarded by agentbreaker, run through the real runner.
type fixture struct {
	clk   *clock.Fake
	deps  *dependencymap.Map
	cb    *callbacks.Callbacks
	ev    *events
	obs   *recorder // the Observer, unless the test set its own
	model *breakertest.Model
	h     *breakertest.Harness
	sid   string
}

type fixtureConfig struct {
	tools  []tool.Tool
	steps  []breakertest.Step
	then   func(breakertest.Request) breakertest.Step
	deps   map[string]dependencymap.Dependency
	cfg    callbacks.Config // Dependencies, OnEvent, Clock and (if nil) Observer are filled in
	before []*plugin.Plugin // plugins registered before agentbreaker
	after  []*plugin.Plugin // plugins registered after agentbreaker
	marker bool             // register the dispatch marker last
	agent  func(f *fixture, m *breakertest.Model) agent.Agent
	// prepare edits the callbacks' Config before New, with the fixture's clock at hand.
	prepare func(f *fixture, cfg *callbacks.Config)
	// toolsOf adds tools built from the callbacks (wrappers).
	toolsOf func(f *fixture) []tool.Tool
}

func newFixture(t *testing.T, fc fixtureConfig) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(time.Time{}), ev: &events{}, obs: &recorder{}}
	f.deps = dependencymap.MustNew(dependencymap.Config{Default: policy, Dependencies: fc.deps, Clock: f.clk})
	cfg := fc.cfg
	cfg.Dependencies = f.deps
	if extra := cfg.OnEvent; extra != nil {
		cfg.OnEvent = func(e callbacks.Event) { f.ev.add(e); extra(e) }
	} else {
		cfg.OnEvent = f.ev.add
	}
	cfg.Clock = f.clk
	if cfg.Observer == nil {
		cfg.Observer = f.obs
	}
	cfg.TrackDispatch = cfg.TrackDispatch || fc.marker
	if fc.prepare != nil {
		fc.prepare(f, &cfg)
	}
	f.cb = callbacks.MustNew(cfg)
	tools := fc.tools
	if fc.toolsOf != nil {
		tools = append(append([]tool.Tool{}, tools...), fc.toolsOf(f)...)
	}
	f.model = breakertest.MustNewModel(breakertest.ModelConfig{Steps: fc.steps, Then: fc.then})
	var a agent.Agent
	if fc.agent != nil {
		a = fc.agent(f, f.model)
	} else {
		var err error
		a, err = llmagent.New(llmagent.Config{Name: "root", Model: f.model, Tools: tools})
		require.NoError(t, err)
	}
	plugins := append(append(append([]*plugin.Plugin{}, fc.before...), f.cb.Plugin()), fc.after...)
	if fc.marker {
		plugins = append(plugins, f.cb.DispatchPlugin())
	}
	f.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: plugins})
	var err error
	f.sid, err = f.h.NewSession(context.Background())
	require.NoError(t, err)
	return f
}

func (f *fixture) run(t *testing.T, text string) *breakertest.Turn {
	t.Helper()
	turn, err := f.h.Run(context.Background(), f.sid, text)
	require.NoError(t, err)
	return turn
}

func (f *fixture) breaker(t *testing.T, key string) *breaker.Breaker {
	t.Helper()
	b, ok := f.deps.Get(key)
	require.True(t, ok, "no breaker %q", key)
	return b
}

// requireClean asserts that nothing is held: no call in flight, no invocation state,
// no bulkhead slot taken, no probe lease out.
func (f *fixture) requireClean(t *testing.T) {
	t.Helper()
	s := f.cb.Stats()
	require.Zero(t, s.InFlight, "calls in flight")
	require.Zero(t, s.Invocations, "invocation states left")
	require.Zero(t, f.cb.Bulkheads().InUse(), "bulkhead slots taken")
	for _, b := range f.deps.Breakers() {
		require.Zero(t, b.Snapshot().ProbesInFlight, "probe leases of %s", b.Name())
	}
}

// fnTool makes a function tool from a handler.
func fnTool(t *testing.T, name string, h func(agent.Context, map[string]any) (map[string]any, error)) tool.Tool {
	t.Helper()
	ft, err := functiontool.New(functiontool.Config{Name: name, Description: "Tool " + name + "."}, h)
	require.NoError(t, err)
	return ft
}

// callsThenText is a script: call tool with args once per turn, then answer "done".
func callsThenText(tool string) func(breakertest.Request) breakertest.Step {
	return func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call(tool, map[string]any{})
	}
}

// attempts records the retry orchestrator's attempt records.
type attempts struct {
	mu  sync.Mutex
	all []retry.Event
}

func (a *attempts) add(_ context.Context, e retry.Event) {
	a.mu.Lock()
	a.all = append(a.all, e)
	a.mu.Unlock()
}

func (a *attempts) list() []retry.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]retry.Event(nil), a.all...)
}
