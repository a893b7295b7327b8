package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 25 (e): the state document shows a throttled dependency's share shed, its
// window and its refusals by priority; a dependency without a throttle has none.
func TestStateShowsTheThrottle(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{K: 1, MinRequests: 1, Rand: func() uint64 { return 0 }}},
		"crm":    {Tools: []string{"lookup"}},
	}})
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Clock: fc}))
	defer srv.Close()

	th, _ := deps.Throttle("search")
	for i := range 10 {
		th.Report(i < 4)
	}
	refused := 0
	for range 5 {
		if !th.Allow(throttle.Low) {
			refused++
		}
	}
	require.Positive(t, refused)

	st := rawState(t, srv.URL)
	require.NotContains(t, st["crm"], "throttle")
	got := st["search"]["throttle"].(map[string]any)
	require.InDelta(t, th.Probability(), got["shed_share"], 1e-9)
	require.EqualValues(t, 10+refused, got["requests"])
	require.EqualValues(t, 4, got["accepts"])
	require.Equal(t, map[string]any{"low": float64(refused), "normal": 0.0, "high": 0.0, "critical": 0.0}, got["shed"])

	fc.Advance(time.Minute)
	got = rawState(t, srv.URL)["search"]["throttle"].(map[string]any)
	require.Zero(t, got["shed_share"], "the window forgot")
}

// The page shows a shedding badge built as text from numbers.
func TestPageShowsShedding(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: scopeBreakers{}}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	html := string(page)
	require.Contains(t, html, `el("span", "shedding " + Math.round(b.throttle.shed_share * 100) + "%", "badge shedding")`)
	require.Contains(t, html, ".badge.shedding")
}
