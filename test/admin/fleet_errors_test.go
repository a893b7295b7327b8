package admin_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/redistest"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// Issue 26d from the outside: a replica whose Redis refuses its password shows its
// breakers "local" with scope_error "auth" on the admin page, counts the failures as
// error="auth" on /metrics and counts no outage (Redis never answered it). Given the
// right password, the same wiring is fleet-wide and the error is gone.
func TestFleetWrongPasswordShowsAuthOnThePageAndInMetrics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "right-password")
	mk := func(password string) (*replica, *fleet.Fleet) {
		reg := prometheus.NewPedanticRegistry()
		tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
		deps := dependencymap.MustNew(dependencymap.Config{
			Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		})
		f, err := fleet.New(fleet.Config{Addr: srv.Addr, Password: password, App: "t-admin-auth", Prefix: "abtest",
			SyncInterval: 50 * time.Millisecond, OpTimeout: 40 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		require.NoError(t, f.AttachMap(deps))
		tel.Watch(deps)
		tel.WatchFleet(f)
		r := &replica{deps: deps, fleet: f}
		r.admin = httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Scopes: f}))
		t.Cleanup(r.admin.Close)
		r.metrics = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
		t.Cleanup(r.metrics.Close)
		return r, f
	}
	bad, _ := mk("wrong-password")
	testenv.WaitFor(t, 10*time.Second, "crm local because of auth on the page and in the metrics", func() bool {
		st, _ := bad.state(t)
		fams, _ := bad.scrape(t)
		return st["crm"]["scope"] == admin.ScopeLocal && st["crm"]["scope_error"] == "auth" && syncErrors(fams)["auth"] > 0
	})
	fams, _ := bad.scrape(t)
	errs := syncErrors(fams)
	require.Equal(t, counter(fams, "agentbreaker_fleet_sync_failures_total"), errs["auth"]+errs["timeout"]+errs["unreachable"]+errs["protocol"])
	require.Zero(t, errs["unreachable"], "a refused password is not a network fault")
	require.Zero(t, counter(fams, "agentbreaker_fleet_outages_total"), "a Redis that never answered is no outage")

	good, _ := mk("right-password")
	testenv.WaitFor(t, 10*time.Second, "crm fleet-wide with the right password", func() bool {
		st, _ := good.state(t)
		return st["crm"]["scope"] == admin.ScopeFleet
	})
	st, _ := good.state(t)
	require.NotContains(t, st["crm"], "scope_error")
}

// syncErrors reads agentbreaker_fleet_sync_errors_total by class.
func syncErrors(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams["agentbreaker_fleet_sync_errors_total"].GetMetric() {
		out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	return out
}

// The admin page in a real browser says why a replica's breaker is local: a fleet on a
// real Redis that refuses its password shows "local · auth" on the breaker's badge and
// "(auth 1)" on the summary's "deciding locally" chip.
func TestFleetAuthErrorOnThePageInHeadlessChromium(t *testing.T) {
	path := chromium(t)
	srv := redistest.Start(t, "--requirepass", "right-password")
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	f, err := fleet.New(fleet.Config{Addr: srv.Addr, Password: "wrong-password", App: "t-admin-auth-page", Prefix: "abtest",
		SyncInterval: 50 * time.Millisecond, OpTimeout: 40 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	require.NoError(t, f.AttachMap(deps))
	testenv.WaitFor(t, 10*time.Second, "crm local because of auth", func() bool { return f.ScopeError("crm") == fleet.ClassAuth })
	page := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Scopes: f}))
	t.Cleanup(page.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true))
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	require.NoError(t, chromedp.Do(browser,
		chromedp.Navigate(page.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#load")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-dependency="crm"] td.state`)),
	))
	got, err := chromedp.Run(browser, chromedp.Evaluate[map[string]string](`({
		badge: document.querySelector('tr[data-dependency="crm"] .badge.scope').textContent,
		tip: document.querySelector('tr[data-dependency="crm"] .badge.scope').title,
		row: document.querySelector('tr[data-dependency="crm"]').dataset.scopeError,
		chip: document.querySelector('#summary [data-count="deciding locally"]').textContent,
		chipErrors: document.querySelector('#summary [data-count="deciding locally"]').dataset.errors})`))
	require.NoError(t, err)
	require.Equal(t, "local · auth", got["badge"])
	require.Contains(t, got["tip"], "password")
	require.Equal(t, "auth", got["row"])
	require.Equal(t, "1deciding locally (auth 1)", got["chip"])
	require.Equal(t, "auth", got["chipErrors"])
}
