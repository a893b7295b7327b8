package mcpguard_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// Every tool the server lists is under the one key, and they trip together: failures
// of get_order open the breaker that then refuses charge_card before it is sent.
func TestToolsOfOneServerTripTogether(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Order, mcptest.Structured(map[string]any{"status_code": 503, "message": "upstream down"}))
	r := newRig(t, rigConfig{endpoint: h.URL(), then: alternate(order(), breakertest.Text("done"))})
	for range 4 {
		r.turn()
	}
	require.Equal(t, []string{"charge_card", "get_order"}, r.deps.Tools("payments"))
	require.Equal(t, breaker.Open, r.state(), "4 failures in structured content count")
	r.model = nil
	r2 := r.withSteps(t, charge(), breakertest.Text("done"))
	turn := r2.turn()
	got := responses(turn)["charge_card"]
	require.Len(t, got, 1)
	require.True(t, payloads.Is(got[0]), "charge_card is answered locally: %v", got[0])
	require.Equal(t, 0, h.Requests(mcptest.Charge), "nothing was sent")
	require.Equal(t, 0, srv.Charges())
}

// The list changes: a tool the server adds later joins the same key.
func TestToolAddedLaterJoinsTheKey(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), then: alternate(breakertest.Text("done"))})
	r.turn()
	srv.AddRefund()
	r.turn()
	key, ok := r.deps.DependencyOf("refund")
	require.True(t, ok)
	require.Equal(t, "payments", key)
	require.Equal(t, []string{"charge_card", "get_order", "refund"}, r.deps.Tools("payments"))
}

// A server that is down when the very first turn starts: adk-go alone fails the run
// before the model is called; guarded, the turn goes on, the model is told the tools
// are unavailable, and the failed listing counts.
func TestServerDownAtFirstTurn(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	h.Down()
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{breakertest.Text("payments are down, sorry")}})
	turn := r.turn()
	require.Equal(t, "payments are down, sorry", turn.FinalText())
	require.Equal(t, 1, r.model.Calls())
	require.Contains(t, r.prompts.last(), `The tools of "payments" are unavailable right now`)
	require.Empty(t, r.model.Requests()[0].Declarations, "no tool is declared")
	require.Equal(t, int64(1), r.ts.Stats().ListFailures)
}

// Down before a later turn: the last good list is offered, calls fail and count, the
// breaker opens; then listing is not attempted (0 requests reach the server, which is
// up again) and calls are answered locally with the unavailable payload.
func TestServerDownBeforeTurn(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), then: alternate(order(), breakertest.Text("done"))})
	r.turn()
	require.Equal(t, 1, srv.Calls(mcptest.Order))
	require.Equal(t, 2, r.model.Calls())
	require.Equal(t, int64(1), r.ts.Stats().Lists, "adk-go lists a tool set once per agent run, not per model call")
	h.Down()
	for range 2 {
		turn := r.turn()
		got := responses(turn)["get_order"]
		require.Len(t, got, 1)
		require.Equal(t, []string{"charge_card", "get_order"}, declared(r.model.Requests()[len(r.model.Requests())-2]))
	}
	require.Equal(t, breaker.Open, r.state(), "2 failed listings and 2 failed calls")
	require.Equal(t, int64(2), r.ts.Stats().ListFailures)
	h.Up(t)
	before := h.AllRequests()
	turn := r.turn()
	require.Equal(t, before, h.AllRequests(), "while the breaker refuses, nothing is sent: no listing, no call")
	require.Equal(t, int64(1), r.ts.Stats().ListSkipped)
	got := responses(turn)["get_order"]
	require.Len(t, got, 1)
	require.True(t, payloads.Is(got[0]), "answered locally: %v", got[0])
	require.Equal(t, "unavailable", got[0]["status"], "%v", got[0])
}

// Down during a turn: the first call works, the server goes away, the next calls of
// the same turn fail and count.
func TestServerDownDuringTurn(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	calls := 0
	r := newRig(t, rigConfig{endpoint: h.URL(), then: func(breakertest.Request) breakertest.Step {
		calls++
		if calls == 2 {
			h.Down()
		}
		if calls <= 5 {
			return order()
		}
		return breakertest.Text("done")
	}})
	r.turn()
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 4, "1 success, 3 failures: the breaker opens and refuses the 5th")
	require.Equal(t, classify.Succeeded, outcomes[0].Outcome)
	for _, e := range outcomes[1:] {
		require.Equal(t, classify.Counts, e.Verdict, "%+v", e)
	}
	require.Equal(t, breaker.Open, r.state())
	require.Len(t, r.events.of(callbacks.EventShortCircuit), 1)
}

// A server that hangs past the tool's timeout: the call fails as a timeout (counted),
// the turn goes on, and once the tool set is closed no goroutine is left.
func TestHangPastToolTimeout(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Hang(mcptest.Order)
	r := newRig(t, rigConfig{endpoint: h.URL(), timeout: 300 * time.Millisecond, steps: []breakertest.Step{order(), breakertest.Text("done")}})
	start := time.Now()
	r.turn()
	require.Less(t, time.Since(start), 10*time.Second)
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 1)
	require.Equal(t, classify.ClassTimeout, outcomes[0].Class)
	require.Equal(t, classify.Unknown, outcomes[0].Outcome)
	require.Equal(t, classify.Counts, outcomes[0].Verdict)
	require.NoError(t, r.ts.Close())
	srv.Release()
	h.Down()
	requireNoGoroutines(t)
}

// A read-only call that the refresher sends again after the connection closed is one
// call to the plugin: one outcome, from the second send's answer.
func TestReadOnlyResendIsOneLogicalCall(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{order(), breakertest.Text("done")}})
	h.CloseAfterAccept(mcptest.Order, 1)
	turn := r.turn()
	require.Equal(t, 2, h.Requests(mcptest.Order), "the refresher sent it again")
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 1)
	require.Equal(t, classify.Succeeded, outcomes[0].Outcome)
	require.Equal(t, "order A1: shipped", responses(turn)["get_order"][0]["output"])
}

// A mutation the server accepted before closing the connection gracefully (FIN) is
// not sent again: the server sees exactly one request, the outcome is UNKNOWN, and the
// model is told not to repeat it.
func TestMutationSentOnceAfterGracefulClose(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	h.CloseAfterAccept(mcptest.Charge, -1)
	turn := r.turn()
	require.Equal(t, 1, h.Requests(mcptest.Charge), "one charge request reached the server")
	require.Equal(t, 1, srv.Charges())
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 1)
	require.Equal(t, classify.Unknown, outcomes[0].Outcome)
	require.Equal(t, classify.Counts, outcomes[0].Verdict)
	require.Equal(t, classify.ClassTransport, outcomes[0].Class, "the guard's refusal, classified by its own ToolError")
	require.Len(t, r.events.of(callbacks.EventCallOutcome), 1)
	got := responses(turn)["charge_card"][0]
	require.True(t, payloads.Is(got), "%v", got)
	require.Equal(t, "outcome_unknown", got["status"], "%v", got)
}

// A reset (RST) after the server accepted a mutation: adk-go does not refresh on it;
// one request, UNKNOWN.
func TestMutationResetAfterAccept(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	h.ResetAfterAccept(mcptest.Charge, -1)
	turn := r.turn()
	require.Equal(t, 1, h.Requests(mcptest.Charge))
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 1)
	require.Equal(t, classify.Unknown, outcomes[0].Outcome)
	require.Equal(t, classify.Counts, outcomes[0].Verdict)
	require.Equal(t, "outcome_unknown", responses(turn)["charge_card"][0]["status"])
}

// Without the guard (a plain mcptoolset), the same fault charges twice: the test
// above is not passing by accident.
func TestUnguardedToolsetChargesTwice(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	h.CloseAfterAccept(mcptest.Charge, 1)
	runUnguarded(t, h.URL(), charge())
	require.Equal(t, 2, h.Requests(mcptest.Charge))
	require.Equal(t, 2, srv.Charges())
}

// A mutation over stdio whose server process exits after reading it: one request, the
// outcome UNKNOWN.
func TestStdioMutationServerExitsAfterAccept(t *testing.T) {
	log := t.TempDir() + "/calls"
	r := newRig(t, rigConfig{transport: commandTransport(mcptest.StdioExitOn, log), steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	turn := r.turn()
	require.Equal(t, 1, mcptest.LoggedCalls(log))
	outcomes := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 1)
	require.Equal(t, classify.Unknown, outcomes[0].Outcome)
	require.Equal(t, "outcome_unknown", responses(turn)["charge_card"][0]["status"])
}

// A stdio server as a child process: calls go through and are guarded by the key.
func TestStdioServer(t *testing.T) {
	log := t.TempDir() + "/calls"
	r := newRig(t, rigConfig{transport: commandTransport(mcptest.StdioOK, log), steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	turn := r.turn()
	require.Equal(t, 1, mcptest.LoggedCalls(log))
	require.Equal(t, map[string]any{"charged": true}, responses(turn)["charge_card"][0]["output"])
	require.Equal(t, []string{"charge_card", "get_order"}, r.deps.Tools("payments"))
}

// A stdio server whose command cannot start is a server down at the first turn: the
// turn goes on and the model is told the tools are unavailable.
func TestStdioServerThatCannotStart(t *testing.T) {
	cmd := exec.Command(filepath.Join(t.TempDir(), "no-such-server"))
	r := newRig(t, rigConfig{transport: &mcp.CommandTransport{Command: cmd}, steps: []breakertest.Step{breakertest.Text("sorry")}})
	turn := r.turn()
	require.Equal(t, "sorry", turn.FinalText())
	require.Contains(t, r.prompts.last(), `The tools of "payments" are unavailable right now`)
	require.Equal(t, int64(1), r.ts.Stats().ListFailures)
}

// A server may answer a mutation with "input required" (here: confirm the charge),
// and the SDK sends the call again with the input (SEP-2322). That second send
// follows an answer, so the guard lets it through: one charge, over streamable HTTP
// and over an in-process connection.
func TestMutationAskingForInputIsSentAgainAfterTheAnswer(t *testing.T) {
	confirming := func() *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: "cashier", Version: "v1"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
			},
		})
	}
	check := func(t *testing.T, r *rig, srv *mcptest.Server) {
		turn := r.turn()
		require.Equal(t, 2, srv.Calls(mcptest.Charge), "asked, then sent again with the answer")
		require.Equal(t, 1, srv.Charges())
		out := r.events.of(callbacks.EventCallOutcome)
		require.Len(t, out, 1)
		require.Equal(t, classify.Succeeded, out[0].Outcome)
		require.Equal(t, true, responses(turn)["charge_card"][0]["output"].(map[string]any)["charged"])
	}
	t.Run("streamable_http", func(t *testing.T) {
		srv := mcptest.NewServer()
		srv.ConfirmCharges()
		h := mcptest.NewHTTP(t, srv)
		r := newRig(t, rigConfig{steps: []breakertest.Step{charge(), breakertest.Text("done")}, guard: func(c *mcpguard.Config) {
			c.Toolset = mcptoolset.Config{Endpoint: h.URL(), Client: confirming()}
		}})
		check(t, r, srv)
		require.Equal(t, 2, h.Requests(mcptest.Charge))
	})
	t.Run("in_memory", func(t *testing.T) {
		srv := mcptest.NewServer()
		srv.ConfirmCharges()
		clientT, serverT := mcp.NewInMemoryTransports()
		ss, err := srv.MCP.Connect(context.Background(), serverT, nil)
		require.NoError(t, err)
		t.Cleanup(func() { ss.Wait() }) // after the tool set's Close (cleanups run last first)
		r := newRig(t, rigConfig{steps: []breakertest.Step{charge(), breakertest.Text("done")}, guard: func(c *mcpguard.Config) {
			c.Toolset = mcptoolset.Config{Transport: clientT, Client: confirming()}
		}})
		check(t, r, srv)
	})
}
