// Package mcp_test drives agentbreaker's MCP guard (package mcpguard) with the
// dispatch-intent journal: a mutation whose outcome is unknown is journaled for an
// operator, one the server refused is not. It lives in the test module because the
// journal's SQLite driver must not reach the go.sum of mcpguard's users.
package mcp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// world is an agent whose charge_card comes from an MCP server guarded as
// "payments", with the plugin, a Retrier and a journal on SQLite.
type world struct {
	h *breakertest.Harness
	j *journal.Journal
}

func newWorld(t *testing.T, endpoint string) *world {
	t.Helper()
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	deps := dependencymap.MustNew(dependencymap.Config{})
	cb := callbacks.MustNew(callbacks.Config{
		Dependencies: deps,
		SideEffects: callbacks.SideEffects{
			MutatingTools: []string{mcptest.Charge},
			Retry:         retry.MustNew(retry.Config{Journal: j.ForRetry()}),
			Journal:       j,
		},
	})
	ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: mcptoolset.Config{Endpoint: endpoint}})
	t.Cleanup(func() { _ = ts.Close() })
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call(mcptest.Charge, map[string]any{"card": "4242", "amount": 12.5})
	}})
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: m, Toolsets: []tool.Toolset{ts}})
	require.NoError(t, err)
	return &world{h: breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}}), j: j}
}

// turn runs one turn in a new session and returns what charge_card answered, as JSON.
func (w *world) turn(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sid, err := w.h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := w.h.Run(ctx, sid, "pay")
	require.NoError(t, err)
	frs := turn.FunctionResponses()
	require.Len(t, frs, 1)
	b, err := json.Marshal(frs[0].Response)
	require.NoError(t, err)
	return string(b)
}

// The server accepts the charge and closes the connection gracefully (FIN): adk-go's
// refresher would send it again; guarded, the server sees exactly one request, the
// outcome is UNKNOWN, the intent waits for an operator, and the next turn's same
// charge is refused rather than sent.
func TestMCPMutationClosedAfterAcceptIsJournaledUnknown(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	h.CloseAfterAccept(mcptest.Charge, -1)
	w := newWorld(t, h.URL())
	first := w.turn(t)
	require.Contains(t, first, payloads.TypeOutcomeUnknown)
	require.Equal(t, 1, h.Requests(mcptest.Charge), "sent once")
	require.Equal(t, 1, srv.Charges())
	intents, err := w.j.Intents(t.Context(), journal.Filter{})
	require.NoError(t, err)
	require.Len(t, intents, 1, "one attempt, journaled")
	require.Equal(t, classify.Unknown, intents[0].Outcome)
	require.Equal(t, journal.StateUnknown, intents[0].State, "unsettled: nobody may replay it but an operator")
	require.Equal(t, "payments", intents[0].Dependency)

	h.CloseAfterAccept("", 0)
	second := w.turn(t)
	require.Contains(t, second, payloads.TypeOutcomeUnknown, "not replayed automatically")
	require.Equal(t, 1, h.Requests(mcptest.Charge))
}

// The server refuses the charge with isError: FAILED (the server answered), nothing
// for an operator, and the customer's retry in the next turn goes through.
func TestMCPRefusedMutationIsFailedAndMayBeRetried(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Charge, mcptest.IsError("card_declined: The card was declined."))
	w := newWorld(t, h.URL())
	first := w.turn(t)
	require.Contains(t, first, "The card was declined.")
	require.NotContains(t, first, payloads.TypeOutcomeUnknown)
	pending, err := w.j.Pending(t.Context())
	require.NoError(t, err)
	require.Empty(t, pending)
	intents, err := w.j.Intents(t.Context(), journal.Filter{})
	require.NoError(t, err)
	require.Len(t, intents, 1)
	require.Equal(t, classify.Failed, intents[0].Outcome)
	require.Equal(t, journal.StateFailed, intents[0].State)

	srv.Set(mcptest.Charge, mcptest.OK())
	second := w.turn(t)
	require.Contains(t, second, "ch_1", "the retry went through")
	require.Equal(t, 1, srv.Charges())
	require.Equal(t, 2, h.Requests(mcptest.Charge))
}
