package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/internal/pairedturns"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// costArm is one way of putting an MCP server's tools under the plugin: "listed", the
// way before mcpguard (a plain mcptoolset, its tool names in Dependency.Tools), or
// "guarded" (mcpguard). Both talk to the same kind of in-process server over the SDK's
// in-memory transport, so the difference is the guard's own work.
func costArm(tb testing.TB, guarded bool, call string) *breakertest.Harness {
	return costArmN(tb, guarded, call, 1, -1)
}

// costArmN is costArm with calls parallel calls per turn and the guard's Timeout.
func costArmN(tb testing.TB, guarded bool, call string, calls int, timeout time.Duration) *breakertest.Harness {
	tb.Helper()
	srv := mcptest.NewServer()
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := srv.MCP.Connect(context.Background(), serverT, nil)
	if err != nil {
		tb.Fatal(err)
	}
	args := map[string]any{"order_id": "A1"}
	if call == mcptest.Charge {
		args = map[string]any{"card": "4242", "amount": 1.0}
	}
	fc := make([]*genai.FunctionCall, calls)
	for i := range fc {
		fc[i] = &genai.FunctionCall{Name: call, Args: args}
	}
	m := breakertest.MustNewModel(breakertest.ModelConfig{
		Repeat: true, DiscardRequests: true,
		Steps: []breakertest.Step{breakertest.Calls(fc...), breakertest.Text("done")},
	})
	var deps *dependencymap.Map
	if guarded {
		deps = dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"payments": {}}})
	} else {
		deps = dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
			"payments": {Tools: []string{mcptest.Charge, mcptest.Order}},
		}})
	}
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{mcptest.Charge}}, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"payments": 100}}})
	var ts tool.Toolset
	closeTS := func() {}
	if guarded {
		g := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Timeout: timeout, Toolset: mcptoolset.Config{Transport: clientT}})
		ts, closeTS = g, func() { g.Close() }
	} else {
		tr := &closingTransport{inner: clientT}
		ts = must(mcptoolset.New(mcptoolset.Config{Transport: tr}))
		closeTS = tr.close
	}
	tb.Cleanup(func() { closeTS(); ss.Wait() })
	a := must(llmagent.New(llmagent.Config{Name: "cashier", Model: m, Toolsets: []tool.Toolset{ts}}))
	return breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
}

// BenchmarkGuardOverheadPaired measures what mcpguard adds to a runner turn with one
// MCP tool call, over the plugin guarding the same tool set by listing its names, by
// alternating turns of the two arms in one loop (as callbacks'
// BenchmarkToolCallOverheadPaired does, and for the same reason: drift falls on both
// arms alike). It reports overhead-% of the guarded arm and both arms' ns/turn.
func BenchmarkGuardOverheadPaired(b *testing.B) {
	for _, call := range []string{mcptest.Order, mcptest.Charge} {
		b.Run("call="+call, func(b *testing.B) {
			r := pairedturns.Run(b, costArm(b, false, call), costArm(b, true, call))
			b.ReportMetric(r.OverheadPercent(), "overhead-%")
			b.ReportMetric(float64(r.Base.Nanoseconds()), "ns/turn-listed")
			b.ReportMetric(float64(r.Measured.Nanoseconds()), "ns/turn-guarded")
		})
	}
}

// TestGuardAllocOverhead holds mcpguard to issue 22 (h): a tool call through a tool
// set guarded by mcpguard allocates no more than the same call through the same tool
// set guarded the way before it (a plain mcptoolset, its tool names listed in
// Dependency.Tools). Per call is told from per turn by running turns of 1 and of 8
// parallel calls: per call = (allocs(8) - allocs(1)) / 7. A read-only call costs the
// guard nothing; a mutating call costs one allocation, the context that carries its
// send-once state to the transport. The per-turn difference (the listing) is logged.
// Measured with Timeout negative: a per-call timeout is tooltimeout's cost, logged too.
func TestGuardAllocOverhead(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	perTurn := func(guarded bool, call string, calls int, timeout time.Duration) float64 {
		h := costArmN(t, guarded, call, calls, timeout)
		ctx := context.Background()
		turn := func() {
			sid, err := h.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Run(ctx, sid, "go"); err != nil {
				t.Fatal(err)
			}
		}
		turn() // caches, the coarse clock and the MCP session warm up outside the count
		return testing.AllocsPerRun(100, turn)
	}
	perCall := func(guarded bool, call string, timeout time.Duration) (call1, each float64) {
		one, eight := perTurn(guarded, call, 1, timeout), perTurn(guarded, call, 8, timeout)
		return one, (eight - one) / 7
	}
	for _, tt := range []struct {
		call  string
		extra float64 // allocations per call the guard may add
	}{{mcptest.Order, 0}, {mcptest.Charge, 1}} {
		t.Run(tt.call, func(t *testing.T) {
			listedTurn, listed := perCall(false, tt.call, 0)
			guardedTurn, guarded := perCall(true, tt.call, -1)
			_, timed := perCall(true, tt.call, time.Minute)
			t.Logf("allocs per %s call: %.2f listed, %.2f guarded (%+.2f); with a 1m per-call timeout %.2f",
				tt.call, listed, guarded, guarded-listed, timed)
			t.Logf("allocs per turn with one call: %.0f listed, %.0f guarded (%+.0f)", listedTurn, guardedTurn, guardedTurn-listedTurn)
			// Half an allocation of slack: the MCP session's own allocations wander by a
			// fraction with the lengths of its request IDs.
			if guarded-listed > tt.extra+0.5 {
				t.Errorf("mcpguard adds %.2f allocations per call, want at most %v", guarded-listed, tt.extra)
			}
		})
	}
}
