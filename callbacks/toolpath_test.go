package callbacks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/docstrings"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/retry"
)

type orderArgs struct {
	OrderID int `json:"order_id"`
}

// Issue 12a: arguments that fail functiontool's schema validation never reached the
// dependency; six of them must not open its breaker.
func TestSchemaRejectedArgumentsDoNotCount(t *testing.T) {
	t.Parallel()
	var handled atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "get_order", Description: "Gets an order."},
		func(_ agent.Context, a orderArgs) (map[string]any, error) {
			handled.Add(1)
			return map[string]any{"status": "ok", "order_id": a.OrderID}, nil
		})
	require.NoError(t, err)
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{lookup},
		// The model gets the type of order_id wrong every time.
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			return breakertest.Call("get_order", map[string]any{"order_id": "A-17"})
		},
		Deps: map[string]dependencymap.Dependency{"orders": {Tools: []string{"get_order"}}},
	})
	for range 6 {
		f.Run(t, "where is my order")
	}
	require.Zero(t, handled.Load(), "the handler must never have run")
	b := f.Breaker(t, "orders")
	require.Equal(t, breaker.Closed, b.State())
	require.Zero(t, b.Snapshot().Window.Failures, "schema rejections counted against the dependency")
	outcomes := f.Events.Of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 6)
	for _, e := range outcomes {
		require.Equal(t, classify.ClassValidation, e.Class)
		require.Equal(t, classify.Neutral, e.Verdict)
		require.Equal(t, classify.FailedBeforeSend, e.Outcome)
	}
	f.RequireClean(t)
}

// Issue 12c: six parallel short-circuits in one model response leave the "temp:"
// mirror of the count at 6, not at whatever the last call in the list wrote.
func TestShortCircuitMirrorWithParallelCalls(t *testing.T) {
	t.Parallel()
	// The last call in the list goes first and the others wait for it to end, so a
	// mirror written by each call ends with the last call's count: 1.
	lastDone := make(chan struct{})
	order, err := plugin.New(plugin.Config{Name: "order",
		BeforeToolCallback: func(ctx agent.Context, _ tool.Tool, _ map[string]any) (map[string]any, error) {
			if ctx.FunctionCallID() != "c6" {
				<-lastDone
			}
			return nil, nil
		}})
	require.NoError(t, err)
	signal, err := plugin.New(plugin.Config{Name: "signal",
		AfterToolCallback: func(ctx agent.Context, _ tool.Tool, _, _ map[string]any, _ error) (map[string]any, error) {
			if ctx.FunctionCallID() == "c6" {
				close(lastDone)
			}
			return nil, nil
		}})
	require.NoError(t, err)
	calls := make([]*genai.FunctionCall, 6)
	for i := range calls {
		calls[i] = &genai.FunctionCall{ID: fmt.Sprintf("c%d", i+1), Name: "lookup", Args: map[string]any{"n": i}}
	}
	f := callbackstest.New(t, callbackstest.Config{
		Tools:  []tool.Tool{callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return nil, errBoom })},
		Steps:  []breakertest.Step{breakertest.Calls(calls...), breakertest.Text("done")},
		Deps:   map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Before: []*plugin.Plugin{order},
		After:  []*plugin.Plugin{signal},
	})
	f.Breaker(t, "crm").ForceOpen("test")
	turn, err := f.Harness.Run(context.Background(), f.Session, "look them up")
	require.NoError(t, err)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 6)
	key := loopguard.DefaultStatePrefix + "crm"
	var last any
	for _, ev := range turn.Events {
		if v, ok := ev.Actions.StateDelta[key]; ok {
			last = v
		}
	}
	require.EqualValues(t, 6, last, "the mirror of the short-circuit count")
	f.RequireClean(t)
}

// Issue 12d: the idle sweep must not free an invocation while one of its calls is
// still running: the call's failure would be lost and its bulkhead slot handed out
// twice.
func TestIdleSweepKeepsInvocationsWithCallsInFlight(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	slow := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) {
		if n.Add(1) == 1 {
			close(entered)
			<-release
			return nil, errBoom
		}
		return map[string]any{"status": "ok"}, nil
	})
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{slow}, Then: callbackstest.CallsThenText("lookup"),
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{IdleInvocationTimeout: time.Minute, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 1}}},
	})
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := f.Harness.Run(ctx, f.Session, "first")
		first <- err
	}()
	<-entered
	f.Clock.Advance(5 * time.Minute) // the first call has been running for longer than the idle timeout
	sid2, err := f.Harness.NewSession(ctx)
	require.NoError(t, err)
	_, err = f.Harness.Run(ctx, sid2, "second") // a new invocation runs the sweep
	require.NoError(t, err)
	require.Len(t, f.Events.Of(callbacks.EventBulkheadRejected), 1, "the slot is still held by the first call")
	require.Zero(t, f.CB.Stats().Orphans)
	close(release)
	require.NoError(t, <-first)
	out := f.Events.Of(callbacks.EventCallOutcome)
	require.Len(t, out, 1)
	require.Equal(t, classify.Counts, out[0].Verdict, "the first call's failure reached its breaker")
	f.RequireClean(t)
}

// Issue 12f: a tool that says "not found" with classify's typed errors does not trip
// its breaker, however often the model asks for something that does not exist, while
// the same tool's typed 503s do.
func TestTypedToolErrorsThroughTheRunner(t *testing.T) {
	t.Parallel()
	s := breakertest.NewServer(t)
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup", URL: s.URL, TypedErrors: true})
	require.NoError(t, err)
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{lookup},
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			return breakertest.Call("lookup", map[string]any{"query": "customer 99"})
		},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	s.Set(breakertest.Status(http.StatusNotFound))
	for range 6 {
		f.Run(t, "who is 99")
	}
	b := f.Breaker(t, "crm")
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, breaker.Counts{Calls: 6}, b.Snapshot().Window)
	s.Set(breakertest.Status(http.StatusServiceUnavailable))
	for range 6 {
		f.Run(t, "who is 99")
	}
	require.Equal(t, breaker.Open, b.State())
	f.RequireClean(t)
}

// Issue 12i: a burst of three calls against a bulkhead of one, to a quick and healthy
// dependency, is refused but does not open its breaker; a bulkhead held by a call that
// has been running for a while does count.
func TestBulkheadRejectionsCountOnlyWhenSlowCallsHoldTheSlots(t *testing.T) {
	t.Parallel()
	rejected := make(chan struct{}, 64)
	var slowNext atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	quick := callbackstest.FnTool(t, "lookup", func(_ agent.Context, args map[string]any) (map[string]any, error) {
		if slowNext.CompareAndSwap(true, false) {
			entered <- struct{}{}
			<-release
			return map[string]any{"status": "ok"}, nil
		}
		// Hold the slot until the burst's other two calls were answered.
		<-rejected
		<-rejected
		return map[string]any{"status": "ok"}, nil
	})
	burst := breakertest.Calls(
		&genai.FunctionCall{Name: "lookup", Args: map[string]any{"n": 1}},
		&genai.FunctionCall{Name: "lookup", Args: map[string]any{"n": 2}},
		&genai.FunctionCall{Name: "lookup", Args: map[string]any{"n": 3}},
	)
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{quick},
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			return burst
		},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{
			Bulkheads: callbacks.Bulkheads{
				Limits: map[string]int{"crm": 1},
			},
			Observability: callbacks.Observability{
				OnEvent: func(e callbacks.Event) {
					if e.Kind == callbacks.EventBulkheadRejected || e.Kind == callbacks.EventShortCircuit {
						rejected <- struct{}{} // the burst's other calls were answered
					}
				},
			},
		},
	})
	b := f.Breaker(t, "crm")
	for range 3 {
		f.Run(t, "burst")
	}
	require.Len(t, f.Events.Of(callbacks.EventBulkheadRejected), 6)
	require.Equal(t, breaker.Closed, b.State(), "quick calls filled the bulkhead")
	require.Equal(t, breaker.Counts{Calls: 3}, b.Snapshot().Window)
	for _, e := range f.Events.Of(callbacks.EventBulkheadRejected) {
		require.Equal(t, classify.Neutral, e.Verdict)
	}

	// Now one call hangs and holds the slot for longer than the slow-call age.
	ctx := context.Background()
	slowNext.Store(true)
	sid2, err := f.Harness.NewSession(ctx)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := f.Harness.Run(ctx, sid2, "single")
		done <- err
	}()
	<-entered
	f.Clock.Advance(callbacks.DefaultBulkheadSlowCall + time.Second)
	// Single calls from other sessions are refused; each refusal now counts.
	single := breakertest.MustNewModel(breakertest.ModelConfig{Then: callbackstest.CallsThenText("lookup")})
	h := harnessWith(t, f.CB, single, quick)
	for range 4 {
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		_, err = h.Run(ctx, sid, "one")
		require.NoError(t, err)
	}
	require.Equal(t, breaker.Open, b.State(), "a bulkhead held by a slow call is evidence against the dependency")
	close(release)
	require.NoError(t, <-done)
	f.RequireClean(t)
}

// changingTool declares a description that the test changes between steps.
type changingTool struct{ desc atomic.Pointer[string] }

func (c *changingTool) Name() string        { return "lookup" }
func (c *changingTool) Description() string { return *c.desc.Load() }
func (c *changingTool) IsLongRunning() bool { return false }
func (c *changingTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "lookup", Description: c.Description()}
}
func (c *changingTool) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	return toolutils.PackTool(req, c)
}
func (c *changingTool) Run(agent.Context, any) (map[string]any, error) {
	d := "Looks up, version 2."
	c.desc.Store(&d)
	return map[string]any{"status": "ok"}, nil
}

// Issue 12j: the declarations are cached per tool set, yet a tool that declares
// something new is seen as it is now, with the sentence exactly once.
func TestCachedDeclarationsFollowTheTool(t *testing.T) {
	t.Parallel()
	ct := &changingTool{}
	d := "Looks up, version 1."
	ct.desc.Store(&d)
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{ct}, Then: callbackstest.CallsThenText("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	f.Run(t, "one")
	f.Run(t, "two")
	reqs := f.Model.Requests()
	require.Len(t, reqs, 4)
	for i, want := range []string{"version 1.", "version 2.", "version 2.", "version 2."} {
		decl, ok := reqs[i].Declaration("lookup")
		require.True(t, ok)
		require.Contains(t, decl.Description, want, "request %d", i)
		require.Equal(t, 1, strings.Count(decl.Description, docstrings.Sentence), "request %d", i)
	}
}

// Issue 12b through the runner: three distinct calls fail in one step and the model
// re-issues the third. Failures nobody retries must not spend the budget's floor (one
// retry in ten seconds), so the one real re-issue goes through and nothing counts as
// a refusal.
func TestRetryBudgetChargedOnlyForRealRetries(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	lookup := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) {
		if runs.Add(1) <= 3 {
			return nil, classify.UpstreamFailure(0, "the CRM failed")
		}
		return map[string]any{"status": "ok"}, nil
	})
	rec := &callbackstest.Attempts{}
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{lookup},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{Name: "lookup", Args: map[string]any{"id": 1}},
				&genai.FunctionCall{Name: "lookup", Args: map[string]any{"id": 2}},
				&genai.FunctionCall{Name: "lookup", Args: map[string]any{"id": 3}},
			),
			breakertest.Call("lookup", map[string]any{"id": 3}),
			breakertest.Text("done"),
		},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: f.Clock, OnAttempt: []func(context.Context, retry.Event){rec.Add},
				Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: f.Clock})})
		},
	})
	turn := f.Run(t, "look them up")
	require.Equal(t, int64(4), runs.Load(), "the re-issue reached the tool")
	rs := turn.FunctionResponses()
	require.Equal(t, "ok", rs[len(rs)-1].Response["status"])
	for _, e := range rec.List() {
		require.False(t, e.Stop == retry.ReasonBudgetExhausted && !e.Retry, "a refusal nobody asked for: %+v", e)
	}
	require.Empty(t, f.Events.Of(callbacks.EventRetryRefused))
	f.RequireClean(t)
}

// Issue 15f and 15g: short-circuit and attempt records carry the invocation ID as
// request_id (the function call ID as function_call_id), and the plugin's attempt
// records carry the breaker state and the policy version.
func TestRecordsCarryInvocationAndBreakerState(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := &callbackstest.Attempts{}
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return nil, errBoom })},
		Then:  callbackstest.CallsThenText("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"},
			Policy: breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1, Version: "crm-v7"}}},
		Callbacks: callbacks.Config{Observability: callbacks.Observability{Logger: logger}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: f.Clock, OnAttempt: []func(context.Context, retry.Event){rec.Add}})
		},
	})
	var turns []*breakertest.Turn
	for range 5 { // four failures open the breaker; the fifth call is short-circuited
		turns = append(turns, f.Run(t, "look it up"))
	}
	sc := f.Events.Of(callbacks.EventShortCircuit)
	require.Len(t, sc, 1)
	last := turns[4]
	require.Equal(t, last.InvocationID(), sc[0].InvocationID)

	mu.Lock()
	text := logs.String()
	mu.Unlock()
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r["event"] == "short_circuit" {
			found = true
			require.Equal(t, last.InvocationID(), r["request_id"])
			require.Equal(t, last.FunctionCalls()[0].ID, r["function_call_id"])
		}
	}
	require.True(t, found, "no short-circuit record in the log")

	evs := rec.List()
	require.NotEmpty(t, evs)
	for i, e := range evs {
		require.Equal(t, turns[i].InvocationID(), e.RequestID, "attempt record %d", i)
		require.Equal(t, "crm-v7", e.PolicyVersion, "attempt record %d", i)
		require.NotEmpty(t, e.BreakerState, "attempt record %d", i)
	}
	require.Equal(t, "closed", evs[0].BreakerState)
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
