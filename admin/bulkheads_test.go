package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// token is a bearer token strong enough for admin.New.
const token = "s3cr3t-t0ken-for-tests-0123456789"

func TestBulkheadGroup(t *testing.T) {
	t.Parallel()
	require.Nil(t, admin.BulkheadGroup(nil), "no group, no bulkheads section")

	g := bulkhead.MustNewGroup(bulkhead.GroupConfig{Limits: map[string]int{"search": 1, "crm": 2}, Default: 3})
	view := admin.BulkheadGroup(g)
	acquire := func(dep string) *bulkhead.Bulkhead {
		t.Helper()
		b, err := g.For(dep)
		require.NoError(t, err)
		require.NoError(t, b.TryAcquire())
		return b
	}
	steps := []struct {
		name string
		do   func()
		want []admin.BulkheadStatus
	}{
		{"configured bulkheads, idle", func() {}, []admin.BulkheadStatus{
			{Dependency: "crm", Limit: 2}, {Dependency: "search", Limit: 1},
		}},
		{"calls in flight", func() { acquire("crm"); acquire("crm"); acquire("search") }, []admin.BulkheadStatus{
			{Dependency: "crm", InFlight: 2, Limit: 2}, {Dependency: "search", InFlight: 1, Limit: 1},
		}},
		{"a default-sized bulkhead appears once used", func() { acquire("mail") }, []admin.BulkheadStatus{
			{Dependency: "crm", InFlight: 2, Limit: 2}, {Dependency: "mail", InFlight: 1, Limit: 3}, {Dependency: "search", InFlight: 1, Limit: 1},
		}},
		{"slots given back", func() {
			for _, b := range g.Bulkheads() {
				for b.InUse() > 0 {
					b.Release()
				}
			}
		}, []admin.BulkheadStatus{
			{Dependency: "crm", Limit: 2}, {Dependency: "mail", Limit: 3}, {Dependency: "search", Limit: 1},
		}},
	}
	for _, s := range steps {
		s.do()
		require.Equal(t, s.want, view.BulkheadStatus(), s.name)
	}
}

// TestBulkheadGroupShowsALiveCall holds a real tool call inside its bulkhead (the local
// dependency hangs) and reads the admin endpoint meanwhile: the call's slot shows, and
// is gone once the call ends.
func TestBulkheadGroupShowsALiveCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"billing": {Tools: []string{"get_invoice"}}},
	})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"billing": 2}}})
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Bulkheads: admin.BulkheadGroup(cb.Bulkheads())}))
	t.Cleanup(srv.Close)
	state := func() []admin.BulkheadStatus {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/state", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var doc admin.State
		require.NoError(t, json.Unmarshal(raw, &doc))
		return doc.Bulkheads
	}

	billing := breakertest.NewServer(t)
	billing.Set(breakertest.Hang())
	invoice, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "get_invoice", URL: billing.URL})
	require.NoError(t, err)
	m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("get_invoice", map[string]any{"query": "INV-7"}),
		breakertest.Text("done"),
	}})
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{invoice}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)

	require.Equal(t, []admin.BulkheadStatus{{Dependency: "billing", Limit: 2}}, state())
	done := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, sid, "Is INV-7 paid?")
		done <- err
	}()
	require.NoError(t, billing.WaitHanging(t.Context(), 1))
	require.Equal(t, []admin.BulkheadStatus{{Dependency: "billing", InFlight: 1, Limit: 2}}, state())
	billing.Release()
	require.NoError(t, <-done)
	require.Equal(t, []admin.BulkheadStatus{{Dependency: "billing", Limit: 2}}, state())
}
