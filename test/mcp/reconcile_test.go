package mcp_test

import (
	"context"
	"path/filepath"
	"testing"

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

// newReconcilingWorld is newWorld with the journal's status lookup for "payments":
// the server's read-only charge_status tool, asked by the key the charge carried.
// It is wired as docs/mcp.md shows: the lookup first (it needs neither the plugin nor
// the tool set), then the journal, the plugin and the tool set.
func newReconcilingWorld(t *testing.T, endpoint string) *world {
	t.Helper()
	paymentsTools := mcptoolset.Config{Endpoint: endpoint}
	paymentsStatus, err := mcpguard.StatusLookup(paymentsTools, mcptest.Status)
	require.NoError(t, err)
	j, err := journal.Open(context.Background(), journal.Config{
		Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")},
		Lookups: map[string]journal.StatusLookup{"payments": paymentsStatus},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	cb := callbacks.MustNew(callbacks.Config{
		Dependencies: dependencymap.MustNew(dependencymap.Config{}),
		SideEffects: callbacks.SideEffects{
			MutatingTools: []string{mcptest.Charge},
			Retry:         retry.MustNew(retry.Config{Journal: j.ForRetry()}),
			Journal:       j,
		},
	})
	ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: paymentsTools})
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

// unknownCharge runs a turn whose charge ends UNKNOWN and returns its intent, after
// checking that the journal recorded the key the server received.
func unknownCharge(t *testing.T, w *world, srv *mcptest.Server) journal.Intent {
	t.Helper()
	require.Contains(t, w.turn(t), payloads.TypeOutcomeUnknown)
	intents, err := w.j.Intents(t.Context(), journal.Filter{})
	require.NoError(t, err)
	require.Len(t, intents, 1)
	in := intents[0]
	require.Equal(t, classify.Unknown, in.Outcome)
	require.Equal(t, journal.StateUnknown, in.State)
	require.Equal(t, []string{in.IdempotencyKey}, srv.Keys(mcptest.Charge), "the server got the key the journal holds")
	return in
}

// Issue 48 (3): the server applied the charge and closed the connection before
// answering. The outcome is UNKNOWN; Reconcile asks the server's status tool about the
// charge's key, which the server applied: the intent is settled applied.
func TestMCPUnknownChargeReconciledApplied(t *testing.T) {
	srv := mcptest.NewServer()
	srv.AddStatus()
	h := mcptest.NewHTTP(t, srv)
	h.CloseAfterAccept(mcptest.Charge, 1)
	w := newReconcilingWorld(t, h.URL())
	in := unknownCharge(t, w, srv)
	require.Equal(t, 1, srv.Charges())

	rep, err := w.j.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.Applied, 1)
	require.Empty(t, rep.NotApplied)
	require.Empty(t, rep.Awaiting)
	got, err := w.j.Get(t.Context(), in.ID)
	require.NoError(t, err)
	require.Equal(t, journal.StateApplied, got.State)
	require.Equal(t, []string{in.IdempotencyKey}, srv.Keys(mcptest.Status), "asked by the charge's key")
	require.Equal(t, 1, srv.Charges())
}

// The server read the charge and closed the connection before applying it. Reconcile
// learns from the status tool that the key was never applied: the intent is settled
// not applied, and the customer's charge in the next turn goes through, once.
func TestMCPUnknownChargeReconciledNotApplied(t *testing.T) {
	srv := mcptest.NewServer()
	srv.AddStatus()
	h := mcptest.NewHTTP(t, srv)
	h.DropAfterAccept(mcptest.Charge, 1)
	w := newReconcilingWorld(t, h.URL())
	in := unknownCharge(t, w, srv)
	require.Equal(t, 0, srv.Charges())

	rep, err := w.j.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.NotApplied, 1)
	require.Empty(t, rep.Applied)
	got, err := w.j.Get(t.Context(), in.ID)
	require.NoError(t, err)
	require.Equal(t, journal.StateNotApplied, got.State)

	require.Contains(t, w.turn(t), "ch_1", "not applied: the charge may be sent, and it goes through")
	require.Equal(t, 2, h.Requests(mcptest.Charge))
	require.Equal(t, 1, srv.Charges())
}

// When the status tool cannot tell (it fails), the intent waits for an operator; once
// the server can answer, the next Reconcile settles it.
func TestMCPUnknownChargeAwaitsWhileTheStatusToolFails(t *testing.T) {
	srv := mcptest.NewServer()
	srv.AddStatus()
	h := mcptest.NewHTTP(t, srv)
	h.CloseAfterAccept(mcptest.Charge, 1)
	w := newReconcilingWorld(t, h.URL())
	unknownCharge(t, w, srv)

	srv.Set(mcptest.Status, mcptest.IsError("status store unavailable"))
	rep, err := w.j.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.Awaiting, 1)
	require.Empty(t, rep.Applied)

	srv.Set(mcptest.Status, mcptest.OK())
	rep, err = w.j.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.Applied, 1)
}
