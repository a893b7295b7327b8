package telemetry_test

import (
	"bytes"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// These tests drive the fleet collector through a FleetSource kept by the test, so that
// the telemetry's tests need no Redis client; test/admin drives it with a real
// *fleet.Fleet, a real Redis and a proxy that cuts it.

// fakeFleet is a FleetSource whose scopes and counters the test sets.
type fakeFleet struct {
	mu                                 sync.Mutex
	scopes                             map[string]string
	syncs, failures, outages, commands int64
}

func (f *fakeFleet) Scope(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scopes[name]
}

func (f *fakeFleet) Counters() (syncs, failures, outages, commands int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs, f.failures, f.outages, f.commands
}

func (f *fakeFleet) set(name, scope string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scopes[name] = scope
}

// fleetBreakers is a BreakerSource of fixed breakers.
type fleetBreakers []*breaker.Breaker

func (l fleetBreakers) Breakers() []*breaker.Breaker { return l }
func (l fleetBreakers) Get(key string) (*breaker.Breaker, bool) {
	for _, b := range l {
		if b.Name() == key {
			return b, true
		}
	}
	return nil, false
}

func newFleetBreakers(names ...string) fleetBreakers {
	var l fleetBreakers
	for _, n := range names {
		l = append(l, breaker.MustNew(breaker.Config{Name: n, Policy: breaker.Policy{Jitter: -1}}))
	}
	return l
}

const fleetFamilies = "agentbreaker_fleet_syncs_total agentbreaker_fleet_sync_failures_total agentbreaker_fleet_outages_total agentbreaker_fleet_redis_commands_total agentbreaker_fleet_local"

func TestFleetMetricsAreReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	fl := &fakeFleet{scopes: map[string]string{"crm": "fleet", "search": "local"}, syncs: 7, failures: 2, outages: 1, commands: 30}
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Fleet: fl})
	tel.Watch(newFleetBreakers("crm", "search", "maps")) // maps is not attached: no row

	want := `
# HELP agentbreaker_fleet_local 1 while a breaker attached to the fleet decides alone on this replica (Redis unreachable, or not synced yet), 0 while it follows the fleet; for dependency="other", the number of folded breakers deciding alone.
# TYPE agentbreaker_fleet_local gauge
agentbreaker_fleet_local{dependency="crm"} %s
agentbreaker_fleet_local{dependency="search"} 1
# HELP agentbreaker_fleet_outages_total Times the fleet lost Redis (the first failed sync of each outage): during an outage the replica's breakers decide alone after LocalAfter.
# TYPE agentbreaker_fleet_outages_total counter
agentbreaker_fleet_outages_total %s
# HELP agentbreaker_fleet_redis_commands_total Redis commands the fleet sent (script runs and loads).
# TYPE agentbreaker_fleet_redis_commands_total counter
agentbreaker_fleet_redis_commands_total 30
# HELP agentbreaker_fleet_sync_failures_total Fleet sync rounds (or single breakers' scripts) that failed: Redis down, slow or partitioned.
# TYPE agentbreaker_fleet_sync_failures_total counter
agentbreaker_fleet_sync_failures_total %s
# HELP agentbreaker_fleet_syncs_total Successful fleet sync rounds with Redis (one pipelined round trip each).
# TYPE agentbreaker_fleet_syncs_total counter
agentbreaker_fleet_syncs_total 7
`
	compare := func(crm, outages, failures string) {
		t.Helper()
		text := want
		for _, v := range []string{crm, outages, failures} {
			text = strings.Replace(text, "%s", v, 1)
		}
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(text), strings.Fields(fleetFamilies)...))
	}
	compare("0", "1", "2")

	// Redis goes away: crm decides alone, the failures and the outage are counted; the
	// next scrape shows it without anything being pushed.
	fl.set("crm", "local")
	fl.mu.Lock()
	fl.failures, fl.outages = 5, 2
	fl.mu.Unlock()
	compare("1", "2", "5")

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)

	// WatchFleet(nil) stops the fleet metrics.
	tel.WatchFleet(nil)
	n, err := testutil.GatherAndCount(reg, strings.Fields(fleetFamilies)...)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestNoFleetNoFleetMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	tel.Watch(newFleetBreakers("crm"))
	n, err := testutil.GatherAndCount(reg, strings.Fields(fleetFamilies)...)
	require.NoError(t, err)
	require.Zero(t, n, "a process without fleet mode exports no fleet series (a 0 would claim a health nobody measured)")
	require.Equal(t, telemetry.DefaultSeriesBound, telemetry.Config{}.SeriesBound())
	require.Equal(t, telemetry.DefaultSeriesBound+telemetry.FleetSeries, telemetry.Config{Fleet: &fakeFleet{}}.SeriesBound())
}

// TestFleetLocalUnderTheSeriesBudget: a breaker's fleet_local row costs one series of
// the budget; once it is spent, breakers deciding alone are counted in the
// dependency="other" row, and the exposition stays under SeriesBound. Hostile names
// (invalid UTF-8, control characters, "other", names that collide once sanitised) are
// sanitised and never break the scrape.
func TestFleetLocalUnderTheSeriesBudget(t *testing.T) {
	t.Parallel()
	hostile := []string{"bad\xffutf8", "bad\xfeutf8", "nul\x00byte", "esc\x1b[31m", "other", `<img src=x onerror=alert(1)>`, "crm"}
	fl := &fakeFleet{scopes: map[string]string{}}
	for _, n := range hostile {
		fl.scopes[n] = "local"
	}
	fl.scopes["crm"] = "fleet"
	// Room for three breakers (22 series each) and two fleet rows.
	cfg := telemetry.Config{Registerer: prometheus.NewPedanticRegistry(), MaxSeries: 3*22 + 2, Fleet: fl}
	tel := telemetry.MustNew(cfg)
	reg := cfg.Registerer.(*prometheus.Registry)
	tel.Watch(newFleetBreakers(hostile...))

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	var body bytes.Buffer
	_, err = body.ReadFrom(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode, body.String())
	text := body.String()
	for _, bad := range []string{"\xff", "\xfe", "\x00", "\x1b"} {
		require.NotContains(t, text, bad)
	}

	var rows []string
	series := 0
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		series++
		if strings.HasPrefix(line, "agentbreaker_fleet_local{") {
			rows = append(rows, strings.TrimSpace(line))
		}
	}
	// Breakers are admitted in the order the source lists them: bad\xffutf8, nul\x00byte
	// and esc (bad\xfeutf8 collides with the first once sanitised, "other" is reserved,
	// then the budget is spent). Their fleet rows are admitted next, in label order,
	// while the budget lasts: two of them. The third one's row, the colliding one,
	// "other", the <img> one and crm are folded: four of them decide alone (crm follows
	// the fleet).
	require.ElementsMatch(t, []string{
		"agentbreaker_fleet_local{dependency=\"bad\ufffdutf8\"} 1",
		"agentbreaker_fleet_local{dependency=\"esc\ufffd[31m\"} 1",
		`agentbreaker_fleet_local{dependency="other"} 4`,
	}, rows)
	require.LessOrEqual(t, series, cfg.SeriesBound())
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// classifiedFleet is a fakeFleet that classifies its failed syncs.
type classifiedFleet struct {
	*fakeFleet
	classes []string
	counts  []int64
}

func (f classifiedFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for i, c := range f.classes {
			if !yield(c, f.counts[i]) {
				return
			}
		}
	}
}

// Issue 26d: a source that classifies its failed syncs gets one row per class of
// agentbreaker_fleet_sync_errors_total, at most FleetErrorClasses of them; a source that
// does not gets none.
func TestFleetSyncErrorsByClass(t *testing.T) {
	t.Parallel()
	fl := classifiedFleet{fakeFleet: &fakeFleet{scopes: map[string]string{"crm": "local"}, failures: 9},
		classes: []string{"timeout", "unreachable", "auth", "protocol", "invented"},
		counts:  []int64{1, 2, 6, 0, 99}}
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Fleet: fl})
	tel.Watch(newFleetBreakers("crm"))
	want := `
# HELP agentbreaker_fleet_sync_errors_total Failed fleet syncs by the class of their error: auth (credentials refused: check the password and ACL user), protocol (the server at the address is not a Redis that runs scripts), unreachable (no connection, or no master for the key), timeout (no answer within OpTimeout). They sum to agentbreaker_fleet_sync_failures_total.
# TYPE agentbreaker_fleet_sync_errors_total counter
agentbreaker_fleet_sync_errors_total{error="auth"} 6
agentbreaker_fleet_sync_errors_total{error="protocol"} 0
agentbreaker_fleet_sync_errors_total{error="timeout"} 1
agentbreaker_fleet_sync_errors_total{error="unreachable"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "agentbreaker_fleet_sync_errors_total"))

	tel.WatchFleet(fl.fakeFleet)
	n, err := testutil.GatherAndCount(reg, "agentbreaker_fleet_sync_errors_total")
	require.NoError(t, err)
	require.Zero(t, n)
}
