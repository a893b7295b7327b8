package mcpguard_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// rig is one agent whose tools come from an MCP server guarded as "payments", run
// through adk-go's real runner with the agentbreaker plugin.
type rig struct {
	t       testing.TB
	cb      *callbacks.Callbacks
	deps    *dependencymap.Map
	ts      *mcpguard.Toolset
	model   *breakertest.Model
	h       *breakertest.Harness
	events  *eventLog
	prompts *promptLog

	mu    sync.Mutex
	queue []breakertest.Step // the model's next answers, before rigConfig.then
}

// withSteps makes steps the model's next answers.
func (r *rig) withSteps(_ testing.TB, steps ...breakertest.Step) *rig {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, steps...)
	return r
}

// alternate answers with steps in turn, forever.
func alternate(steps ...breakertest.Step) func(breakertest.Request) breakertest.Step {
	var mu sync.Mutex
	i := 0
	return func(breakertest.Request) breakertest.Step {
		mu.Lock()
		defer mu.Unlock()
		s := steps[i%len(steps)]
		i++
		return s
	}
}

// declared returns the names of the tools a request declared, in order.
func declared(req breakertest.Request) []string {
	var out []string
	for _, d := range req.Declarations {
		out = append(out, d.Name)
	}
	return out
}

// requireNoGoroutines waits, with a deadline, until no goroutine but the test's own
// is left.
func requireNoGoroutines(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked := leakcheck.Leaked()
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutine(s) left:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// runUnguarded runs one turn of step through a plain mcptoolset and the plugin with
// the tools listed in Dependency.Tools (the way documented before mcpguard).
func runUnguarded(t testing.TB, endpoint string, step breakertest.Step) *breakertest.Turn {
	t.Helper()
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge_card", "get_order"}}},
	})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}})
	// adk-go's tool set cannot be closed: keep its connections to close them.
	tr := &closingTransport{inner: &mcp.StreamableClientTransport{Endpoint: endpoint}}
	t.Cleanup(tr.close)
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: tr})
	require.NoError(t, err)
	m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{step, breakertest.Text("done")}})
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: m, Toolsets: []tool.Toolset{ts}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := h.Run(ctx, sid, "pay")
	require.NoError(t, err)
	return turn
}

// commandTransport runs the test binary as a stdio MCP server in mode.
func commandTransport(mode, callLog string) mcp.Transport {
	return &mcp.CommandTransport{Command: mcptest.Command(mode, callLog)}
}

type rigConfig struct {
	transport mcp.Transport
	endpoint  string
	steps     []breakertest.Step
	then      func(breakertest.Request) breakertest.Step
	timeout   time.Duration
	policy    breaker.Policy
	cb        func(*callbacks.Config)
	guard     func(*mcpguard.Config)
}

// defaultPolicy trips after 4 calls with half of them failing and stays open for a
// minute of the system clock: longer than any test.
var defaultPolicy = breaker.Policy{MinimumCalls: 4, FailureRateThreshold: 0.5, Cooldown: time.Minute, Jitter: -1}

func newRig(t testing.TB, cfg rigConfig) *rig {
	t.Helper()
	if cfg.policy == (breaker.Policy{}) {
		cfg.policy = defaultPolicy
	}
	r := &rig{t: t, events: &eventLog{}, prompts: &promptLog{}}
	r.deps = dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"payments": {Policy: cfg.policy}},
	})
	ccfg := callbacks.Config{Dependencies: r.deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}, Observability: callbacks.Observability{OnEvent: r.events.add}}
	if cfg.cb != nil {
		cfg.cb(&ccfg)
	}
	r.cb = callbacks.MustNew(ccfg)
	gcfg := mcpguard.Config{
		Dependency: "payments", Callbacks: r.cb, Timeout: cfg.timeout,
		Toolset: mcptoolset.Config{Transport: cfg.transport, Endpoint: cfg.endpoint},
	}
	if cfg.guard != nil {
		cfg.guard(&gcfg)
	}
	ts, err := mcpguard.New(gcfg)
	require.NoError(t, err)
	r.ts = ts
	t.Cleanup(func() { ts.Close() })
	r.queue = cfg.steps
	r.model = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
		r.mu.Lock()
		if len(r.queue) > 0 {
			s := r.queue[0]
			r.queue = r.queue[1:]
			r.mu.Unlock()
			return s
		}
		r.mu.Unlock()
		if cfg.then != nil {
			return cfg.then(req)
		}
		return breakertest.Text("done")
	}})
	// Mode set: adk-go sets a root agent's empty Mode on its first run, racing with
	// concurrent runs.
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: r.model, Toolsets: []tool.Toolset{ts}, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	rec, err := plugin.New(plugin.Config{Name: "prompts", BeforeModelCallback: r.prompts.record})
	require.NoError(t, err)
	r.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{r.cb.Plugin(), rec}})
	return r
}

// turn runs one turn in a fresh session; the turn must end without an error.
func (r *rig) turn() *breakertest.Turn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sid, err := r.h.NewSession(ctx)
	require.NoError(r.t, err)
	turn, err := r.h.Run(ctx, sid, "pay")
	require.NoError(r.t, err, "the turn must go on")
	return turn
}

func (r *rig) state() breaker.State {
	b, ok := r.deps.Get("payments")
	require.True(r.t, ok)
	return b.State()
}

// responses returns the function responses of a turn, by tool.
func responses(turn *breakertest.Turn) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for _, fr := range turn.FunctionResponses() {
		out[fr.Name] = append(out[fr.Name], fr.Response)
	}
	return out
}

type eventLog struct {
	mu sync.Mutex
	ev []callbacks.Event
}

func (l *eventLog) add(e callbacks.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, e)
}

func (l *eventLog) of(kind callbacks.EventKind) []callbacks.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []callbacks.Event
	for _, e := range l.ev {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// promptLog keeps the system instruction of every model request.
type promptLog struct {
	mu sync.Mutex
	si []string
}

func (p *promptLog) record(_ agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
	var b strings.Builder
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, part := range req.Config.SystemInstruction.Parts {
			if part != nil {
				b.WriteString(part.Text)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.si = append(p.si, b.String())
	return nil, nil
}

func (p *promptLog) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.si) == 0 {
		return ""
	}
	return p.si[len(p.si)-1]
}

func charge() breakertest.Step {
	return breakertest.Call("charge_card", map[string]any{"card": "4242", "amount": 12.5})
}

func order() breakertest.Step {
	return breakertest.Call("get_order", map[string]any{"order_id": "A1"})
}

type closingTransport struct {
	inner mcp.Transport
	mu    sync.Mutex
	conns []mcp.Connection
}

func (c *closingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.inner.Connect(ctx)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *closingTransport) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
}

// newRigWith is newRig with the guard's Toolset configuration given whole.
func newRigWith(t testing.TB, g mcpguard.Config, steps []breakertest.Step) *rig {
	return newRig(t, rigConfig{steps: steps, guard: func(c *mcpguard.Config) { c.Toolset = g.Toolset }})
}

// readonly is the little of a read-only invocation context that listing reads.
func readonly(t testing.TB) agent.ReadonlyContext {
	return roContext{Context: t.Context()}
}

type roContext struct {
	agent.ReadonlyContext
	context.Context
}

func (c roContext) Deadline() (time.Time, bool) { return c.Context.Deadline() }
func (c roContext) Done() <-chan struct{}       { return c.Context.Done() }
func (c roContext) Err() error                  { return c.Context.Err() }
func (c roContext) Value(k any) any             { return c.Context.Value(k) }
func (c roContext) InvocationID() string        { return "test-invocation" }
