package admin_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestStateShowsHealthProbes (issue 24g): a breaker with a health probe says so, and a
// transition its probe made is marked; a user call's probe is not.
func TestStateShowsHealthProbes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Time{})
	hist := admin.MustNewHistory(admin.HistoryConfig{})
	mk := func(name string) *breaker.Breaker {
		return breaker.MustNew(breaker.Config{Name: name, Clock: clk, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1},
			OnStateChange: []func(breaker.Event){hist.Record}})
	}
	crm, search := mk("crm"), mk("search")
	pr := probe.MustNew(probe.Config{Checks: []probe.Check{{Breaker: crm, Func: func(context.Context) error { return errors.New("down") }}},
		Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	defer pr.Close()
	for _, b := range []*breaker.Breaker{crm, search} {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	clk.Advance(30 * time.Second)
	pr.ProbeDue(t.Context())
	p, err := search.Allow()
	require.NoError(t, err)
	p.Failure()

	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: scopeBreakers{crm, search}, History: hist, Clock: clk}))
	defer srv.Close()
	st := rawState(t, srv.URL)
	require.Equal(t, true, st["crm"]["probed"])
	require.NotContains(t, st["search"], "probed")
	last := func(name string) map[string]any {
		ts := st[name]["transitions"].([]any)
		return ts[0].(map[string]any) // newest first
	}
	require.Equal(t, true, last("crm")["health_probe"], "%v", st["crm"]["transitions"])
	require.Equal(t, "health probe failed", last("crm")["reason"])
	require.NotContains(t, last("search"), "health_probe")
}
