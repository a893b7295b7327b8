package admin_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

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
