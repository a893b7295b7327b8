package sim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// LimitPeer is a concurrency limiter from another library, for the latency-cliff rows.
// It lives in a module of its own (sim/peers), so that no peer enters this module's
// dependencies.
type LimitPeer struct {
	// Name is the row's name; Description says what it runs.
	Name, Description string
	// New builds the limiter for one run; now reads the run's virtual clock.
	New func(now func() time.Time) LimitGuard
}

// LimitGuard is one run's peer limiter. It is called from one goroutine.
type LimitGuard interface {
	// Acquire is asked when a call starts: false refuses it at once.
	Acquire() (LimitPermit, bool)
}

// LimitPermit is an admitted call of a LimitGuard.
type LimitPermit interface {
	// Done reports the call's end: it answered, or it ran into the tool timeout.
	Done(timedOut bool)
}

// cliffGuard runs each call through agentbreaker's real callbacks plugin: its
// before-tool callback (breaker, adaptive limit, bulkhead), its on-error and after-tool
// callbacks, and its end-of-run callback, one invocation per call.
type cliffGuard struct {
	cb       *callbacks.Callbacks
	deps     *dependencymap.Map
	breaker  *breaker.Breaker
	before   llmagent.BeforeToolCallback
	onErr    llmagent.OnToolErrorCallback
	after    llmagent.AfterToolCallback
	afterRun plugin.AfterRunCallback
	tool     simTool
	timeout  time.Duration
	n        int
}

// cliffPermit is one call admitted by a cliffGuard.
type cliffPermit struct {
	g   *cliffGuard
	inv *invocation
	ctx agent.Context
}

// newCliffGuard builds the plugin as a user would: the dependency's policy over the
// map's tool defaults, a bulkhead of bulk (0: none) and, when ad is set, the adaptive
// limit. onChange, when set, hears the breaker's transitions.
func newCliffGuard(clk clock.Clock, policy breaker.Policy, bulk int, ad *adaptivelimit.Config, timeout time.Duration, onChange func(breaker.Event)) (*cliffGuard, error) {
	const dep = "backend"
	cfg := dependencymap.Config{
		Default:      policy,
		Dependencies: map[string]dependencymap.Dependency{dep: {Tools: []string{"lookup_" + dep}, Adaptive: ad}},
		Clock:        clk,
		Rand:         func() float64 { return 0.5 },
	}
	if onChange != nil {
		cfg.OnStateChange = []func(breaker.Event){onChange}
	}
	deps, err := dependencymap.New(cfg)
	if err != nil {
		return nil, err
	}
	b, _ := deps.Get(dep)
	bc := callbacks.Bulkheads{}
	if bulk > 0 {
		bc.Limits = map[string]int{dep: bulk}
	}
	cb, err := callbacks.New(callbacks.Config{Dependencies: deps, Clock: clk, Guidance: callbacks.Guidance{DisableDocstrings: true}, Bulkheads: bc})
	if err != nil {
		return nil, err
	}
	pl := cb.Plugin()
	return &cliffGuard{cb: cb, deps: deps, breaker: b, before: pl.BeforeToolCallback(), onErr: pl.OnToolErrorCallback(),
		after: pl.AfterToolCallback(), afterRun: pl.AfterRunCallback(), tool: simTool("lookup_" + dep), timeout: timeout}, nil
}

func (g *cliffGuard) Acquire() (LimitPermit, bool) {
	g.n++
	inv := &invocation{Context: context.Background(), id: "call-" + strconv.Itoa(g.n)}
	ctx := agent.NewToolContext(inv, "fc-"+strconv.Itoa(g.n), nil, nil)
	res, err := g.before(ctx, g.tool, nil)
	if res != nil || err != nil {
		g.afterRun(inv)
		return nil, false
	}
	return &cliffPermit{g: g, inv: inv, ctx: ctx}, true
}

func (p *cliffPermit) Done(timedOut bool) {
	g := p.g
	if timedOut {
		err := &tooltimeout.TimeoutError{Tool: g.tool.Name(), Limit: g.timeout}
		_, _ = g.onErr(p.ctx, g.tool, nil, err)
		_, _ = g.after(p.ctx, g.tool, nil, nil, err)
	} else {
		_, _ = g.after(p.ctx, g.tool, nil, map[string]any{"status": "ok"}, nil)
	}
	g.afterRun(p.inv)
}

func (g *cliffGuard) check() error {
	if s := g.cb.Stats(); s.Panics != 0 {
		return fmt.Errorf("sim: the callbacks recovered %d panics", s.Panics)
	}
	return nil
}

// noLimit admits every call.
type noLimit struct{}

type noPermit struct{}

func (noLimit) Acquire() (LimitPermit, bool) { return noPermit{}, true }
func (noPermit) Done(bool)                   {}
