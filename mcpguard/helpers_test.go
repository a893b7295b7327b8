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
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
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
}

type rigConfig struct {
	transport mcp.Transport
	endpoint  string
	steps     []breakertest.Step
	then      func(breakertest.Request) breakertest.Step
	timeout   time.Duration
	policy    breaker.Policy
	cb        func(*callbacks.Config)
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
	ccfg := callbacks.Config{Dependencies: r.deps, MutatingTools: []string{"charge_card"}, OnEvent: r.events.add}
	if cfg.cb != nil {
		cfg.cb(&ccfg)
	}
	r.cb = callbacks.MustNew(ccfg)
	ts, err := mcpguard.New(mcpguard.Config{
		Dependency: "payments", Callbacks: r.cb, Timeout: cfg.timeout,
		Toolset: mcptoolset.Config{Transport: cfg.transport, Endpoint: cfg.endpoint},
	})
	require.NoError(t, err)
	r.ts = ts
	t.Cleanup(func() { ts.Close() })
	r.model = breakertest.MustNewModel(breakertest.ModelConfig{Steps: cfg.steps, Then: cfg.then})
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: r.model, Toolsets: []tool.Toolset{ts}})
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

var _ = genai.RoleUser
