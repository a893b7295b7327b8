package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 34 (f): the state document shows a dependency's adaptive limit, its bounds,
// the calls in flight, the measured no-load latency and the refusals by priority; a
// dependency without one has none.
func TestStateShowsTheAdaptiveLimit(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Adaptive: &adaptivelimit.Config{MinLimit: 2, InitialLimit: 2, MaxLimit: 40}},
		"crm":    {Tools: []string{"lookup"}},
	}})
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Clock: fc}))
	defer srv.Close()

	l := deps.Limiter("search")
	_, err := l.Acquire(throttle.Normal)
	require.NoError(t, err)
	_, err = l.Acquire(throttle.Low) // Low's share of 2 is 2×0.6 → 2: admitted
	require.NoError(t, err)
	_, err = l.Acquire(throttle.Low)
	require.Error(t, err)

	st := rawState(t, srv.URL)
	require.NotContains(t, st["crm"], "adaptive")
	got := st["search"]["adaptive"].(map[string]any)
	require.EqualValues(t, 2, got["limit"])
	require.EqualValues(t, 2, got["min_limit"])
	require.EqualValues(t, 40, got["max_limit"])
	require.Equal(t, true, got["at_floor"])
	require.EqualValues(t, 2, got["in_flight"])
	require.EqualValues(t, 0, got["no_load_seconds"])
	require.Equal(t, map[string]any{"low": 1.0, "normal": 0.0, "high": 0.0, "critical": 0.0}, got["refused"])
}

// The page shows the limit as a badge built as text from numbers.
func TestPageShowsTheAdaptiveLimit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: scopeBreakers{}}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	html := string(page)
	require.Contains(t, html, `"limit " + (Number(a.limit) || 0)`)
	require.Contains(t, html, ".badge.adaptive.at-floor")
}
