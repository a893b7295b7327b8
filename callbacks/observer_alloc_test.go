package callbacks

import (
	"iter"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// toolCtx is the part of adk-go's tool context the callbacks use; calling anything else
// panics on the nil embedded interface, which would show the callbacks need more.
type toolCtx struct {
	agent.Context
	callID string
	state  noState
}

func (c *toolCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *toolCtx) Done() <-chan struct{}       { return nil }
func (c *toolCtx) Err() error                  { return nil }
func (c *toolCtx) Value(any) any               { return nil }
func (c *toolCtx) InvocationID() string        { return "inv-1" }
func (c *toolCtx) FunctionCallID() string      { return c.callID }
func (c *toolCtx) State() session.State        { return c.state }

// noState drops what it is given.
type noState struct{}

func (noState) Get(string) (any, error)     { return nil, session.ErrStateKeyNotExist }
func (noState) Set(string, any) error       { return nil }
func (noState) All() iter.Seq2[string, any] { return func(func(string, any) bool) {} }

// namedTool is a tool with only a name.
type namedTool string

func (n namedTool) Name() string        { return string(n) }
func (n namedTool) Description() string { return "Tool " + string(n) + "." }
func (n namedTool) IsLongRunning() bool { return false }

var _ tool.Tool = namedTool("")

// TestObserverCallsAllocateNothing runs a guarded call through the before- and
// after-tool callbacks, and a short-circuited one, without an Observer and with one
// that does nothing: reporting must not add a single allocation to either path, so the
// nil default costs nothing and a real Observer pays only for its own work.
func TestObserverCallsAllocateNothing(t *testing.T) {
	allocs := func(obs observe.Calls, open bool) float64 {
		clk := clock.NewFake(time.Unix(0, 0))
		deps := dependencymap.MustNew(dependencymap.Config{Clock: clk})
		c := MustNew(Config{Dependencies: deps, Clock: clk, Guidance: Guidance{DisableDocstrings: true}, Observability: Observability{Observer: obs}})
		tl := namedTool("lookup")
		if open {
			b, err := deps.ForTool("lookup")
			if err != nil {
				t.Fatal(err)
			}
			b.ForceOpen("test")
		}
		before, after := c.beforeTool(pluginLayer), c.afterTool(pluginLayer)
		ctx := &toolCtx{callID: "call-1"}
		args, result := map[string]any{}, map[string]any{"status": "ok"}
		run := func() {
			short, _ := before(ctx, tl, args)
			if short != nil {
				result = short
			}
			_, _ = after(ctx, tl, args, result, nil)
		}
		run() // create the invocation state and the breaker outside the measurement
		n := testing.AllocsPerRun(200, run)
		if s := c.Stats(); s.InFlight != 0 || s.Panics != 0 {
			t.Fatalf("stats after the runs: %+v", s)
		}
		return n
	}
	for _, open := range []bool{false, true} {
		without, with := allocs(nil, open), allocs(observe.Nop{}, open)
		t.Logf("open=%v: %.0f allocations per call without an Observer, %.0f with one", open, without, with)
		if with != without {
			t.Errorf("open=%v: an Observer that does nothing adds %.0f allocations per call", open, with-without)
		}
	}
}
