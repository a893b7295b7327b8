package mcpguard_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/auth"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// A listing that hangs ends at ListTimeout, counts as a failed listing, and the turn
// goes on; Logger gets the record with the class and no server text.
func TestListTimeoutBoundsAHangingListing(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	h.HangList(true)
	var logs syncbuf.Buffer
	deps := dependencymap.MustNew(dependencymap.Config{})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	ts := mcpguard.MustNew(mcpguard.Config{
		Dependency: "payments", Callbacks: cb, ListTimeout: 200 * time.Millisecond,
		Toolset: mcptoolset.Config{Endpoint: h.URL()},
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	t.Cleanup(func() { ts.Close() })
	start := time.Now()
	tools, err := ts.Tools(readonly(t))
	took := time.Since(start)
	require.NoError(t, err, "a failed listing never fails the turn")
	require.Len(t, tools, 1, "the notice stands in")
	require.Less(t, took, 5*time.Second, "bounded by ListTimeout (200ms), not the default 10s")
	require.GreaterOrEqual(t, took, 200*time.Millisecond)
	require.Equal(t, int64(1), ts.Stats().ListFailures)
	require.Contains(t, logs.String(), `"error_class":"timeout"`)
	require.Contains(t, logs.String(), `"dependency":"payments"`)

	h.HangList(false)
	tools, err = ts.Tools(readonly(t))
	require.NoError(t, err)
	require.Len(t, tools, 2, "the server lists again")
}

// A tool name the dependency map already puts under another key is left out of the
// list (it would be guarded by the wrong breaker), loudly; the others are offered.
func TestToolBoundElsewhereIsLeftOut(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	var logs syncbuf.Buffer
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"orders": {Tools: []string{mcptest.Order}}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: mcptoolset.Config{Endpoint: h.URL()},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	t.Cleanup(func() { ts.Close() })
	tools, err := ts.Tools(readonly(t))
	require.NoError(t, err)
	require.Len(t, tools, 1)
	require.Equal(t, mcptest.Charge, tools[0].Name())
	key, _ := deps.DependencyOf(mcptest.Order)
	require.Equal(t, "orders", key)
	require.Contains(t, logs.String(), `tool \"get_order\" is under dependency \"orders\"`)
}

// The same listing twice offers the same tools (the plugin's caches stay warm); Close
// ends the connections, and a listing after it neither dials nor counts.
func TestRelistingKeepsToolsAndCloseStops(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	deps := dependencymap.MustNew(dependencymap.Config{})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	ts := mcpguard.MustNew(mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: mcptoolset.Config{Endpoint: h.URL()}})
	first, err := ts.Tools(readonly(t))
	require.NoError(t, err)
	second, err := ts.Tools(readonly(t))
	require.NoError(t, err)
	require.Len(t, second, 2)
	for i := range first {
		require.Same(t, first[i], second[i])
	}
	require.Equal(t, int64(2), ts.Stats().Lists)
	require.NoError(t, ts.Close())
	n := h.AllRequests()
	third, err := ts.Tools(readonly(t))
	require.NoError(t, err)
	require.Equal(t, first, third, "the last good list")
	require.Equal(t, n, h.AllRequests())
	b, _ := deps.Get("payments")
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, int64(0), ts.Stats().ListFailures)
}

// Toolset.Auth is applied below the send-once guard: the server sees the credential.
func TestAuthReachesTheServer(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRigWith(t, mcpguard.Config{Toolset: mcptoolset.Config{Endpoint: h.URL(), Auth: auth.StaticToken("s3cr3t")}},
		[]breakertest.Step{charge(), breakertest.Text("done")})
	r.turn()
	require.Equal(t, "Bearer s3cr3t", h.Authorization())
	require.Equal(t, 1, srv.Charges())
}

// A call after Close is refused locally: nothing is sent and nothing counts.
func TestCallAfterCloseIsNotSentAndDoesNotCount(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(order())})
	r.turn()
	require.NoError(t, r.ts.Close())
	n := h.AllRequests()
	for range 5 {
		r.turn()
	}
	require.Equal(t, n, h.AllRequests())
	out := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, out, 6)
	for _, e := range out[1:] {
		require.Equal(t, classify.FailedBeforeSend, e.Outcome)
		require.Equal(t, classify.Neutral, e.Verdict)
	}
	require.Equal(t, breaker.Closed, r.state())
}
