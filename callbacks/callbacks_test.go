package callbacks_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
)

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		cfg     callbacks.Config
		wantErr string
	}{
		{"no map", callbacks.Config{}, "callbacks: Config.Dependencies = nil: required"},
		{"idle too short", callbacks.Config{Dependencies: deps, IdleInvocationTimeout: time.Second}, "callbacks: Config.IdleInvocationTimeout = 1s: must be between 1m and 24h"},
		{"nil classifier", callbacks.Config{Dependencies: deps, Classifiers: map[string]*classify.Classifier{"crm": nil}}, `callbacks: Config.Classifiers["crm"] = nil`},
		{"empty alternative", callbacks.Config{Dependencies: deps, Guidance: callbacks.Guidance{Alternatives: map[string][]string{"a": {""}}}}, `callbacks: Config.Guidance.Alternatives["a"][0] = "": tool name is empty`},
		{"empty mutating", callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{""}}}, `callbacks: Config.SideEffects.MutatingTools[0] = ""`},
		{"empty exempt", callbacks.Config{Dependencies: deps, ExemptTools: []string{"x", ""}}, `callbacks: Config.ExemptTools[1] = ""`},
		{"negative bulkhead", callbacks.Config{Dependencies: deps, Bulkheads: callbacks.Bulkheads{Default: -1}}, "callbacks: Config.Bulkheads.Default = -1"},
		{"bad bulkhead", callbacks.Config{Dependencies: deps, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 0}}}, `callbacks: Config.Bulkheads: bulkhead: GroupConfig.Limits["crm"]`},
		{"bad loop guard", callbacks.Config{Dependencies: deps, Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{FirmAfter: -1}}}, "callbacks: Config.Guidance.LoopGuard: loopguard: Config.FirmAfter = -1"},
		{"blank docstring", callbacks.Config{Dependencies: deps, Guidance: callbacks.Guidance{Docstring: "  "}}, `callbacks: Config.Guidance.Docstring = "  ": is blank`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := callbacks.New(tt.cfg)
			require.Nil(t, cb)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { callbacks.MustNew(callbacks.Config{}) })
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	require.Equal(t, "agentbreaker", cb.Plugin().Name())
	require.Equal(t, "agentbreaker-dispatch", cb.DispatchPlugin().Name())
	require.Contains(t, callbacks.BuiltinTools(), "transfer_to_agent")
}

func TestShortCircuitIsNeverRecordedAsACall(t *testing.T) {
	t.Parallel()
	var ok atomic.Bool
	var runs atomic.Int64
	crm := callbackstest.FnTool(t, "lookup", func(ctx agent.Context, _ map[string]any) (map[string]any, error) {
		runs.Add(1)
		if ok.Load() {
			return map[string]any{"status": "ok"}, nil
		}
		return nil, errBoom
	})
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{crm}, Then: callbackstest.CallsThenText("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
	})
	for range 4 {
		f.Run(t, "look it up")
	}
	b := f.Breaker(t, "crm")
	require.Equal(t, breaker.Open, b.State())
	before := b.Snapshot()
	require.Equal(t, int64(4), runs.Load())

	f.Clock.Advance(10 * time.Second)
	for range 3 {
		turn := f.Run(t, "look it up")
		rs := turn.FunctionResponses()
		require.Len(t, rs, 1)
		p := rs[0].Response
		require.Equal(t, payloads.TypeUnavailable, p["response_type"])
		require.Equal(t, "unavailable", p["status"])
		require.Equal(t, "crm", p["dependency"])
		require.Equal(t, "lookup", p["tool"])
		require.Equal(t, "unclassified", p["error_class"], "the class of the failures that tripped it")
		require.Equal(t, false, p["retry_advised"])
		require.Equal(t, int64(20), p["retry_after_seconds"])
		require.NotContains(t, p["reason"], errBoom.Error())
	}
	require.Equal(t, int64(4), runs.Load(), "short-circuited calls never reach the tool")
	after := b.Snapshot()
	require.Equal(t, before.Window, after.Window, "short-circuits are not measured")
	require.Equal(t, before.Generation, after.Generation)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 3)
	require.Len(t, f.Events.Of(callbacks.EventCallOutcome), 4, "only real calls have outcomes")

	// The dependency recovers; the probe goes through and closes the breaker.
	ok.Store(true)
	f.Clock.Advance(20 * time.Second)
	f.Run(t, "look it up")
	require.Equal(t, breaker.Closed, b.State())
	f.RequireClean(t)
}

func TestParallelCallsWithTheSameIDAreNotConfused(t *testing.T) {
	t.Parallel()
	// Two calls in one response share a model-supplied ID; one fails and one succeeds.
	release := make(chan struct{})
	var started atomic.Int64
	crm := callbackstest.FnTool(t, "lookup", func(ctx agent.Context, args map[string]any) (map[string]any, error) {
		if started.Add(1) == 2 {
			close(release)
		}
		<-release // both calls are in flight at once
		if args["fail"] == true {
			return nil, errBoom
		}
		return map[string]any{"status": "ok"}, nil
	})
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{crm},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{ID: "dup", Name: "lookup", Args: map[string]any{"fail": true}},
				&genai.FunctionCall{ID: "dup", Name: "lookup", Args: map[string]any{"fail": false}},
			),
			breakertest.Text("done"),
		},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 2}}},
	})
	f.Run(t, "go")
	w := f.Breaker(t, "crm").Snapshot().Window
	require.Equal(t, int64(2), w.Calls)
	require.Equal(t, int64(1), w.Failures)
	outs := f.Events.Of(callbacks.EventCallOutcome)
	require.Len(t, outs, 2)
	var verdicts []classify.Verdict
	for _, e := range outs {
		require.Equal(t, "dup", e.CallID)
		verdicts = append(verdicts, e.Verdict)
	}
	require.ElementsMatch(t, []classify.Verdict{classify.Counts, classify.Healthy}, verdicts)
	f.RequireClean(t)
}

func TestInventedToolNamesAreTheModelsMistake(t *testing.T) {
	t.Parallel()
	real := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return map[string]any{}, nil })
	var script []breakertest.Step
	for i := range 5 {
		script = append(script, breakertest.Call("made_up_"+string(rune('a'+i)), map[string]any{}))
	}
	script = append(script, breakertest.Text("done"))
	f := callbackstest.New(t, callbackstest.Config{Tools: []tool.Tool{real}, Steps: script})
	turn := f.Run(t, "go")
	for _, r := range turn.FunctionResponses() {
		require.Contains(t, r.Response["error"], "not found", "adk-go's own answer reaches the model")
	}
	require.Empty(t, f.Deps.Breakers(), "no breaker per invented name")
	require.Len(t, f.Events.Of(callbacks.EventUnknownTool), 5)
	for _, e := range f.Events.Of(callbacks.EventUnknownTool) {
		require.Empty(t, e.Tool, "invented names never become a label")
	}
	f.RequireClean(t)
}

func TestBuiltinToolsAreExemptByDefault(t *testing.T) {
	t.Parallel()
	for _, guard := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "guarded"}[guard], func(t *testing.T) {
			t.Parallel()
			f := callbackstest.New(t, callbackstest.Config{
				Callbacks: callbacks.Config{GuardBuiltinTools: guard},
				Agent: func(f *callbackstest.Fixture, m *breakertest.Model) agent.Agent {
					helper, err := llmagent.New(llmagent.Config{Name: "helper", Description: "helps", Model: m})
					require.NoError(t, err)
					root, err := llmagent.New(llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{helper}})
					require.NoError(t, err)
					return root
				},
				Steps: []breakertest.Step{
					breakertest.Call("transfer_to_agent", map[string]any{"agent_name": "helper"}),
					breakertest.Text("helper here"),
				},
			})
			turn := f.Run(t, "go")
			require.Equal(t, "helper here", turn.FinalText())
			_, created := f.Deps.Get("transfer_to_agent")
			require.Equal(t, guard, created)
			reqs := f.Model.Requests()
			d, ok := reqs[0].Declaration("transfer_to_agent")
			require.True(t, ok)
			require.Equal(t, guard, strings.Contains(d.Description, "may return status"), "the docstring goes only on guarded tools")
			f.RequireClean(t)
		})
	}
}

// In-band failures count only when they name an outage: a refusal or a message in
// prose is the dependency answering (issue 22: "db down" in prose needs a
// classify.MatchText rule).
func TestInBandFailuresCountOnlyWithAnOutageSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result map[string]any
		want   classify.Verdict
		class  classify.Class
	}{
		{"status error in prose", map[string]any{"status": "error", "message": "db down"}, classify.Healthy, classify.ClassRefused},
		{"mcp isError without text", map[string]any{"isError": true, "content": []any{}}, classify.Healthy, classify.ClassRefused},
		{"status error with a name", map[string]any{"status": "error", "message": "UNAVAILABLE: db down"}, classify.Counts, classify.ClassHTTP5xx},
		{"in-band 503", map[string]any{"status": "error", "status_code": 503}, classify.Counts, classify.ClassHTTP5xx},
		{"in-band not found", map[string]any{"status": "error", "error_type": "NOT_FOUND"}, classify.Healthy, classify.ClassNotFound},
		{"success", map[string]any{"status": "ok"}, classify.Healthy, classify.ClassNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) { return tt.result, nil })
			f := callbackstest.New(t, callbackstest.Config{Tools: []tool.Tool{tl}, Then: callbackstest.CallsThenText("lookup")})
			f.Run(t, "go")
			outs := f.Events.Of(callbacks.EventCallOutcome)
			require.Len(t, outs, 1)
			require.Equal(t, tt.want, outs[0].Verdict)
			require.Equal(t, tt.class, outs[0].Class)
			w := f.Breaker(t, "lookup").Snapshot().Window
			require.Equal(t, int64(1), w.Calls)
			require.Equal(t, tt.want == classify.Counts, w.Failures == 1)
			f.RequireClean(t)
		})
	}
}

func TestConfirmationRequestsAreNotFailures(t *testing.T) {
	t.Parallel()
	transfer, err := functiontool.New(functiontool.Config{Name: "wire_money", Description: "Sends money.", RequireConfirmation: true},
		func(agent.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok"}, nil
		})
	require.NoError(t, err)
	f := callbackstest.New(t, callbackstest.Config{Tools: []tool.Tool{transfer}, Then: callbackstest.CallsThenText("wire_money")})
	for range 5 {
		f.Run(t, "pay")
	}
	b := f.Breaker(t, "wire_money")
	require.Equal(t, breaker.Closed, b.State())
	require.Zero(t, b.Snapshot().Window.Calls, "asking a person is not a call to the dependency")
	f.RequireClean(t)
}
