package callbacks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/plugin/retryandreflect"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// soakTurns is how many turns the leak test runs: 10,000, or 2,000 under the race
// detector, whose cost per turn through adk-go's runner (about 7ms on two cores) would
// otherwise make the test take over a minute. -short runs 300.
func soakTurns() int {
	switch {
	case testing.Short():
		return 300
	case raceEnabled:
		return 2_000
	}
	return 10_000
}

// latch is closed once, by whoever gets there first.
type latch struct {
	ch   chan struct{}
	once sync.Once
}

func newLatch() *latch  { return &latch{ch: make(chan struct{})} }
func (l *latch) close() { l.once.Do(func() { close(l.ch) }) }

// dice is a seeded random source shared by the tools, the model and the test, which
// run on several goroutines.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (d *dice) intN(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.IntN(n)
}

// TestNoLeaksOverManyTurns runs many turns with random failures, panics, cancellations,
// invented tool names, parallel calls (some sharing an ID), full bulkheads, plugins on
// both sides of agentbreaker and breakers that trip and recover, and then checks that
// every permit, bulkhead slot, probe lease and per-invocation state was given back.
func TestNoLeaksOverManyTurns(t *testing.T) {
	t.Parallel()
	turns := soakTurns()
	d := &dice{r: rand.New(rand.NewPCG(1, 2))}
	clk := clock.NewFake(time.Time{})
	deps := dependencymap.MustNew(dependencymap.Config{
		Default: breaker.Policy{MinimumCalls: 6, Cooldown: 20 * time.Second, Jitter: -1, Window: time.Minute},
		Dependencies: map[string]dependencymap.Dependency{
			"crm":    {Tools: []string{"lookup", "update", "batch"}},
			"search": {Tools: []string{"search"}},
		},
		Clock: clk,
	})
	var kinds sync.Map // EventKind -> *atomic.Int64
	var refused atomic.Pointer[latch]
	refused.Store(newLatch())
	count := func(e callbacks.Event) {
		v, _ := kinds.LoadOrStore(e.Kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		if e.Tool == "batch" && (e.Kind == callbacks.EventBulkheadRejected || e.Kind == callbacks.EventShortCircuit) {
			refused.Load().close()
		}
	}
	cb := callbacks.MustNew(callbacks.Config{
		Dependencies: deps, Clock: clk,
		SideEffects: callbacks.SideEffects{
			TrackDispatch: true,
			MutatingTools: []string{"update"},
		},
		Bulkheads: callbacks.Bulkheads{
			Limits:  map[string]int{"crm": 1},
			Default: 3,
		},
		Observability: callbacks.Observability{
			OnEvent: count,
		},
	})

	var cancelTurn atomic.Pointer[context.CancelFunc]
	behave := func(ctx agent.Context) (map[string]any, error) {
		switch n := d.intN(100); {
		case n < 45:
			return map[string]any{"status": "ok"}, nil
		case n < 65:
			return nil, fmt.Errorf("upstream: %w", errBoom)
		case n < 75:
			return map[string]any{"status": "error", "status_code": 503}, nil
		case n < 80:
			return map[string]any{"status": "error", "error_type": "NOT_FOUND"}, nil
		case n < 85:
			panic("tool bug")
		case n < 88:
			if c := cancelTurn.Load(); c != nil {
				(*c)() // the user closed the session mid-call
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, context.DeadlineExceeded
	}
	handler := func(c agent.Context, _ map[string]any) (map[string]any, error) { return behave(c) }
	// batch is called twice in one response against a bulkhead of one: the call that
	// gets the slot holds it until its sibling has been refused, so rejections happen
	// on every such response, not only when the scheduler happens to overlap calls.
	batch := func(c agent.Context, _ map[string]any) (map[string]any, error) {
		<-refused.Load().ch
		return behave(c)
	}
	raw := tooltimeout.MustWrap(&rawTool{name: "search", run: behave}, tooltimeout.Config{})
	tools := []tool.Tool{
		callbackstest.FnTool(t, "lookup", handler), callbackstest.FnTool(t, "update", handler), raw,
		callbackstest.FnTool(t, "flaky", handler), callbackstest.FnTool(t, "rewritten", handler), callbackstest.FnTool(t, "cached", handler),
		callbackstest.FnTool(t, "batch", batch),
	}
	names := []string{"lookup", "update", "search", "flaky", "rewritten", "cached", "invented_tool"}

	// Plugins on both sides: one ahead of agentbreaker answers some after-callbacks
	// (orphaning those calls), retry-and-reflect and a cache answer after it.
	rewrite := callbackstest.MustPlugin(t, plugin.Config{Name: "rewrite", AfterToolCallback: func(_ agent.Context, tl tool.Tool, _, _ map[string]any, _ error) (map[string]any, error) {
		if tl.Name() == "rewritten" {
			return map[string]any{"status": "ok", "rewritten": true}, nil
		}
		return nil, nil
	}})
	cache := callbackstest.MustPlugin(t, plugin.Config{Name: "cache", BeforeToolCallback: func(_ agent.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
		if tl.Name() == "cached" && d.intN(2) == 0 {
			return map[string]any{"status": "ok", "from_cache": true}, nil
		}
		return nil, nil
	}})

	var callSeq atomic.Int64
	m := breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: true, Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 && d.intN(3) > 0 {
			return breakertest.Text("done")
		}
		if d.intN(7) == 0 {
			return breakertest.Calls(
				&genai.FunctionCall{Name: "batch", Args: map[string]any{"part": 1}},
				&genai.FunctionCall{Name: "batch", Args: map[string]any{"part": 2}},
			)
		}
		n := 1 + d.intN(3)
		calls := make([]*genai.FunctionCall, n)
		for i := range calls {
			id := fmt.Sprintf("c%d", callSeq.Add(1))
			if i > 0 && d.intN(5) == 0 {
				id = calls[0].ID // the model repeats an ID within one response
			}
			calls[i] = &genai.FunctionCall{ID: id, Name: names[d.intN(len(names))], Args: map[string]any{"i": d.intN(4)}}
		}
		return breakertest.Calls(calls...)
	}})
	a, err := llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: tools})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{
		rewrite, cb.Plugin(), retryandreflect.MustNew(), cache, cb.DispatchPlugin(),
	}})

	var sid string
	for i := range turns {
		if i%20 == 0 { // fresh sessions keep the conversation short
			sid, err = h.NewSession(context.Background())
			require.NoError(t, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancelTurn.Store(&cancel)
		refused.Store(newLatch())
		_, _ = h.Run(ctx, sid, "go") // cancelled turns end with an error; that is part of the test
		cancel()
		clk.Advance(time.Duration(d.intN(4000)) * time.Millisecond)
		if s := cb.Stats(); s.InFlight != 0 || s.Invocations != 0 {
			t.Fatalf("turn %d left state behind: %+v", i, s)
		}
	}

	s := cb.Stats()
	require.Zero(t, s.InFlight, "permits and slots held")
	require.Zero(t, s.Invocations, "per-invocation state left")
	require.Zero(t, cb.Bulkheads().InUse(), "bulkhead slots taken")
	for _, b := range deps.Breakers() {
		require.Zero(t, b.Snapshot().ProbesInFlight, "probe leases of %s", b.Name())
	}
	_, invented := deps.Get("invented_tool")
	require.False(t, invented, "no breaker for an invented tool name")
	for _, k := range []callbacks.EventKind{
		callbacks.EventCallOutcome, callbacks.EventShortCircuit, callbacks.EventBulkheadRejected,
		callbacks.EventUnknownTool, callbacks.EventOrphanReleased, callbacks.EventLoopGuardFirm,
	} {
		v, ok := kinds.Load(k)
		require.True(t, ok && v.(*atomic.Int64).Load() > 0, "the soak never exercised %s", k)
	}
	require.Positive(t, s.Orphans)
	require.Zero(t, s.Panics, "no callback of ours panicked")
	t.Logf("%d turns, %d model calls, stats %+v", turns, m.Calls(), s)
}
