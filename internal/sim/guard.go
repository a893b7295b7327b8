package sim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// answer is what one sub-agent's call gave the model.
type answer uint8

const (
	answerData        answer = iota // the dependency answered
	answerError                     // a raw error (no breaker, or a breaker without payloads)
	answerUnavailable               // agentbreaker's unavailable (or busy, or budget) payload
	answerFirm                      // the loop guard's firm payload: answer without the tool
	answerUnknown                   // outcome unknown: do not repeat
)

// call is one attempt to reach the dependency.
type call struct {
	turn    *turn
	sub     int
	attempt int
	id      string
	args    map[string]any
	ctx     agent.Context // agentbreaker: the tool context the callbacks pair by
	gen     uint64        // consecutive: the breaker generation that admitted it
	probe   bool
	shed    bool // agentbreaker: the dependency's throttle shed it
}

// guard is what stands between a call and the dependency in one strategy.
type guard interface {
	// admit is asked at the call's start instant. It reports whether the call is sent,
	// and otherwise what the model is told.
	admit(c *call) (bool, answer)
	// finish reports a sent call's outcome at its completion instant, with the delay a
	// failed call stated (0 for none).
	finish(c *call, failed, timedOut bool, retryAfter time.Duration)
	// endRun is told when a turn's run has ended (no call of it in flight).
	endRun(t *turn)
	// clientAttempts is how many times the tool's own client tries a call.
	clientAttempts() int
	// check returns an error when the guard's own bookkeeping went wrong.
	check() error
}

// noGuard: every call goes through.
type noGuard struct{ attempts int }

func (g noGuard) admit(*call) (bool, answer)            { return true, answerData }
func (noGuard) finish(*call, bool, bool, time.Duration) {}
func (noGuard) endRun(*turn)                            {}
func (g noGuard) clientAttempts() int                   { return g.attempts }
func (noGuard) check() error                            { return nil }

// consecutiveGuard is the comparison breaker most libraries default to (gobreaker's
// defaults): it trips when consecutive failures exceed MaxConsecutive, stays open for
// Open, then lets one probe through; the probe's success closes it. A result that
// arrives after a state change is dropped, as gobreaker's generations do.
type consecutiveGuard struct {
	p        consecutivePolicy
	attempts int
	now      func() time.Time
	rec      *recorder

	state    breaker.State
	gen      uint64
	fails    int
	expiry   time.Time
	inFlight int // half-open requests admitted
}

func (g *consecutiveGuard) setState(to breaker.State, cause string) {
	now := g.now()
	g.rec.transition(now, g.state, to, cause)
	g.state = to
	g.gen++
	g.fails, g.inFlight = 0, 0
	if to == breaker.Open {
		g.expiry = now.Add(g.p.Open)
	}
}

func (g *consecutiveGuard) admit(c *call) (bool, answer) {
	if g.state == breaker.Open && !g.now().Before(g.expiry) {
		g.setState(breaker.HalfOpen, "open timeout elapsed")
	}
	switch g.state {
	case breaker.Open:
		return false, answerError // gobreaker.ErrOpenState reaches the model as an error
	case breaker.HalfOpen:
		if g.inFlight >= 1 {
			return false, answerError // gobreaker.ErrTooManyRequests
		}
		g.inFlight++
		c.probe = true
	}
	c.gen = g.gen
	return true, answerData
}

// finish ignores a stated delay: gobreaker does not read it.
func (g *consecutiveGuard) finish(c *call, failed, _ bool, _ time.Duration) {
	if c.gen != g.gen {
		return
	}
	switch {
	case g.state == breaker.HalfOpen && failed:
		g.setState(breaker.Open, "probe failed")
	case g.state == breaker.HalfOpen:
		g.setState(breaker.Closed, "probe succeeded")
	case failed:
		g.fails++
		if g.fails > g.p.MaxConsecutive {
			g.setState(breaker.Open, fmt.Sprintf("%d consecutive failures", g.fails))
		}
	default:
		g.fails = 0
	}
}

func (*consecutiveGuard) endRun(*turn)          {}
func (g *consecutiveGuard) clientAttempts() int { return g.attempts }
func (*consecutiveGuard) check() error          { return nil }

// abGuard runs each call through agentbreaker's real callbacks plugin: its before-tool
// callback (breaker, bulkhead, retry budget, loop guard), its on-error and after-tool
// callbacks (classification and the report to the breaker), and its end-of-run callback.
type abGuard struct {
	cb       *callbacks.Callbacks
	deps     *dependencymap.Map
	before   llmagent.BeforeToolCallback
	onErr    llmagent.OnToolErrorCallback
	after    llmagent.AfterToolCallback
	afterRun plugin.AfterRunCallback
	tool     simTool
	timeout  time.Duration
	rec      *recorder
	breaker  *breaker.Breaker
	now      func() time.Time
	// overloaded: a failing call is a 503 (a partial outage's dependency is overloaded)
	// rather than a connection reset.
	overloaded bool
}

// newABGuard builds the plugin as a user would: def is dependencymap's Config.Default
// (zero for the plugin's defaults), under which the map lays its tool defaults.
func newABGuard(s Scenario, def breaker.Policy, e *engine, rec *recorder, rnd streams) (*abGuard, error) {
	return newABGuardWith(s, def, e, rec, rnd, nil)
}

// newABGuardWith is newABGuard with the dependency's throttle, when tc is set.
func newABGuardWith(s Scenario, def breaker.Policy, e *engine, rec *recorder, rnd streams, tc *throttle.Config) (*abGuard, error) {
	return newABGuardBudget(s, def, e, rec, rnd, tc, retry.BudgetConfig{})
}

// newABGuardBudget is newABGuardWith with the retry budget's settings (zero fields
// take retry's defaults).
func newABGuardBudget(s Scenario, def breaker.Policy, e *engine, rec *recorder, rnd streams, tc *throttle.Config, bc retry.BudgetConfig) (*abGuard, error) {
	deps, err := dependencymap.New(dependencymap.Config{
		Default: def,
		Dependencies: map[string]dependencymap.Dependency{
			s.Dependency: {Tools: []string{"lookup_" + s.Dependency}, Throttle: tc},
		},
		Clock: e.clk,
		Rand:  rnd.jitter.Float64, // seeded: jitter on, and the run still repeatable
		OnStateChange: []func(breaker.Event){func(ev breaker.Event) {
			rec.transition(ev.At, ev.From, ev.To, ev.Reason)
		}},
	})
	if err != nil {
		return nil, err
	}
	b, ok := deps.Get(s.Dependency)
	if !ok {
		return nil, fmt.Errorf("sim: no breaker for %s", s.Dependency)
	}
	bc.Clock = e.clk
	budgets, err := retry.NewBudgets(bc)
	if err != nil {
		return nil, err
	}
	r, err := retry.New(retry.Config{Clock: e.clk, Rand: rnd.retry.Float64, Budgets: budgets})
	if err != nil {
		return nil, err
	}
	cb, err := callbacks.New(callbacks.Config{
		Dependencies: deps,
		Clock:        e.clk,
		Guidance: callbacks.Guidance{
			DisableDocstrings: true,
		},
		SideEffects: callbacks.SideEffects{
			Retry: r,
		},
		Bulkheads: callbacks.Bulkheads{
			Limits: map[string]int{s.Dependency: s.Bulkhead},
		},
	})
	if err != nil {
		return nil, err
	}
	pl := cb.Plugin()
	return &abGuard{
		cb: cb, deps: deps, before: pl.BeforeToolCallback(), onErr: pl.OnToolErrorCallback(),
		after: pl.AfterToolCallback(), afterRun: pl.AfterRunCallback(),
		tool: simTool("lookup_" + s.Dependency), timeout: s.ToolTimeout, rec: rec, breaker: b, now: e.clk.Now,
	}, nil
}

// policy is the policy the dependency's breaker runs, after every default.
func (g *abGuard) policy() breaker.Policy { return g.breaker.Policy() }

func (g *abGuard) admit(c *call) (bool, answer) {
	c.ctx = agent.NewToolContext(c.turn.inv, c.id, nil, nil)
	res, err := g.before(c.ctx, g.tool, c.args)
	if res == nil && err == nil {
		return true, answerData
	}
	c.shed = res[payloads.KeyResponseType] == payloads.TypeShed // firm or not
	switch {
	case err != nil:
		return false, answerError
	case res[payloads.KeyFirm] == true:
		return false, answerFirm
	case res[payloads.KeyResponseType] == payloads.TypeOutcomeUnknown:
		return false, answerUnknown
	case res[payloads.KeyResponseType] == payloads.TypeBudgetExhausted:
		g.rec.sum.RetryRefused++
		return false, answerUnavailable
	case res[payloads.KeyResponseType] == payloads.TypeBusy:
		g.rec.sum.BulkheadRejected++
		return false, answerUnavailable
	default:
		return false, answerUnavailable
	}
}

func (g *abGuard) finish(c *call, failed, timedOut bool, retryAfter time.Duration) {
	if !failed {
		_, _ = g.after(c.ctx, g.tool, c.args, map[string]any{"status": "ok"}, nil)
		return
	}
	var err error
	switch {
	case timedOut:
		err = &tooltimeout.TimeoutError{Tool: g.tool.Name(), Limit: g.timeout}
	case retryAfter > 0:
		// A 503 with Retry-After, as an HTTP tool reports it.
		cl := classify.HTTPStatus(http.StatusServiceUnavailable, http.Header{"Retry-After": {strconv.Itoa(int(retryAfter.Seconds()))}}, g.now())
		err = &classify.ToolError{Classification: cl, Message: g.tool.Name() + ": service unavailable"}
	case g.overloaded:
		err = overloadError
	default:
		err = fmt.Errorf("%s: read: %w", g.tool.Name(), syscall.ECONNRESET)
	}
	// adk-go's order: the on-error callbacks, then always the after-tool callbacks.
	_, _ = g.onErr(c.ctx, g.tool, c.args, err)
	_, _ = g.after(c.ctx, g.tool, c.args, nil, err)
}

func (g *abGuard) endRun(t *turn)    { g.afterRun(t.inv) }
func (*abGuard) clientAttempts() int { return 1 }

func (g *abGuard) check() error {
	if s := g.cb.Stats(); s.Panics != 0 {
		return fmt.Errorf("sim: the callbacks recovered %d panics: the simulated tool context lacks something they use", s.Panics)
	}
	return nil
}

// simTool is the dependency's tool as the callbacks see it.
type simTool string

func (t simTool) Name() string        { return string(t) }
func (t simTool) Description() string { return "Looks up " + string(t) + "." }
func (simTool) IsLongRunning() bool   { return false }

var _ tool.Tool = simTool("")

// invocation is the little of adk-go's invocation context that a tool context built by
// agent.NewToolContext and agentbreaker's callbacks read: an ID, no artifacts and no
// session (state mirrors are then dropped, which the callbacks allow). Anything else
// would panic on the nil embedded interface; the callbacks recover and count it, and
// abGuard.check turns that count into an error.
type invocation struct {
	agent.InvocationContext
	context.Context
	id string
}

func (i *invocation) InvocationID() string        { return i.id }
func (*invocation) Artifacts() agent.Artifacts    { return nil }
func (*invocation) Session() session.Session      { return nil }
func (i *invocation) Deadline() (time.Time, bool) { return i.Context.Deadline() }
func (i *invocation) Done() <-chan struct{}       { return i.Context.Done() }
func (i *invocation) Err() error                  { return i.Context.Err() }
func (i *invocation) Value(k any) any             { return i.Context.Value(k) }
