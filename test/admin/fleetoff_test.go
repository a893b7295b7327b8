package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// Fleet mode off, as a program writes it: the *fleet.Fleet is built only when Redis
// is configured, and the same variable, nil otherwise, goes to admin.Config.Scopes and
// telemetry.Parts.Fleet. A nil pointer there is a part not configured, as a nil
// interface is: the page and the scrape work and show no fleet (issue 48, item 1).
func TestANilFleetIsFleetModeOff(t *testing.T) {
	var fl *fleet.Fleet // REDIS_ADDR not set
	var j *journal.Journal
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	const token = "Kezvn5rDJTCyqnsY7xtKuY4YRfneZ8Bq"
	h, err := admin.New(admin.Config{Token: token, Breakers: deps, Scopes: fl, Journal: admin.JournalOf(j)})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/api/state", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"name": "crm"`)
	require.NotContains(t, rec.Body.String(), `"scope"`)

	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	tel.Wire(telemetry.Parts{Dependencies: deps, Fleet: fl, Journal: j})
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	require.Contains(t, names, "agentbreaker_breaker_state")
	for _, n := range names {
		require.False(t, strings.HasPrefix(n, "agentbreaker_fleet_") || strings.HasPrefix(n, "agentbreaker_journal_"), n)
	}
}

// The admin page shows each breaker's last transitions with no History wired by hand:
// given a dependency map, admin.New feeds a History of its own from the map (issue 48,
// item 1: history.Record in OnStateChange was a call a newcomer forgot), and tells the
// time by the map's clock.
func TestTheMapFeedsTheHistory(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	const token = "Kezvn5rDJTCyqnsY7xtKuY4YRfneZ8Bq"
	h, err := admin.New(admin.Config{Token: token, Breakers: deps})
	require.NoError(t, err)
	b, ok := deps.Get("crm")
	require.True(t, ok)
	b.ForceOpen("INC-1: CRM maintenance")
	fc.Advance(90 * time.Second)
	req := httptest.NewRequest(http.MethodGet, "/api/state", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"history_configured": true`)
	require.Contains(t, rec.Body.String(), "INC-1: CRM maintenance")
	// Times come from the map's clock, with no Clock given to admin.New.
	require.Contains(t, rec.Body.String(), `"time": "2026-12-08T09:01:30Z"`)
	require.Contains(t, rec.Body.String(), `"at": "2026-12-08T09:00:00Z"`)
}
