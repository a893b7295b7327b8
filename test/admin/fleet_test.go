package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/faultproxy"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// Fleet mode seen from the outside: a replica's admin endpoint and /metrics, with a
// real *fleet.Fleet syncing through a TCP proxy to a real Redis, and a second replica
// talking to Redis directly. The proxy cuts Redis from the first replica and lets it
// back.

// Hostile breaker names a model could invent (unannotated tools get a breaker named
// after the tool). They pass redact.CheckName, so the fleet attaches them.
var fleetHostile = []string{
	`<img src=x onerror="document.title='pwned'">`,
	`</script><script>alert(1)</script>`,
	`quote"brace}{dependency="x"} 1`,
	`back\slash`,
}

// unattachable fails redact.CheckName (invalid UTF-8, an escape sequence): the fleet
// leaves its breaker local and unattached, and nothing may break because of it.
const unattachable = "bad\xff\x1b[31mname"

// fleetApp returns a fresh App name and removes its keys from Redis when the test ends.
func fleetApp(t *testing.T, addr string) string {
	t.Helper()
	app := fmt.Sprintf("t-admin-fleet-%08x", rand.Uint32())
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "abtest:"+app+":*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return app
}

// replica is one process of the agent: its breakers, fleet, telemetry, admin
// endpoint and /metrics.
type replica struct {
	deps    *dependencymap.Map
	fleet   *fleet.Fleet
	admin   *httptest.Server
	metrics *httptest.Server
}

func newReplica(t *testing.T, redisAddr, app, name string) *replica {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := dependencymap.MustNew(dependencymap.Config{
		PolicyVersion: "ops-1",
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	f, err := fleet.New(fleet.Config{Addr: redisAddr, App: app, Prefix: "abtest", Replica: name,
		// LocalAfter well above the interval: on a loaded machine a slow sync must not
		// make a breaker local while Redis is reachable.
		SyncInterval: 100 * time.Millisecond, OpTimeout: 80 * time.Millisecond, LocalAfter: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	require.NoError(t, f.AttachMap(deps))
	// The wiring the README shows (issue 16): agentbreaker_fleet_* on /metrics, read at
	// scrape time, and "scope": "fleet" or "local" on the admin page.
	tel.Watch(deps)
	tel.WatchFleet(f)
	h := admin.MustNew(admin.Config{Token: token, Breakers: deps, Scopes: f})
	r := &replica{deps: deps, fleet: f}
	r.admin = httptest.NewServer(h)
	t.Cleanup(r.admin.Close)
	r.metrics = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(r.metrics.Close)
	t.Cleanup(func() {
		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		require.Empty(t, problems)
	})
	return r
}

// state fetches the admin state document: each breaker's JSON object by name, and the
// raw body.
func (r *replica) state(t *testing.T) (map[string]map[string]any, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, r.admin.URL+"/api/state", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	require.Equal(t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0])
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	var doc struct {
		Breakers []map[string]any `json:"breakers"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	out := map[string]map[string]any{}
	for _, b := range doc.Breakers {
		out[b["name"].(string)] = b
	}
	return out, string(raw)
}

// scopes returns the scope field of every breaker ("" when omitted).
func (r *replica) scopes(t *testing.T) map[string]string {
	t.Helper()
	st, _ := r.state(t)
	out := map[string]string{}
	for name, b := range st {
		s, _ := b["scope"].(string)
		out[name] = s
	}
	return out
}

// act posts an operator action and returns the breaker's status after it.
func (r *replica) act(t *testing.T, name, action string) admin.BreakerStatus {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		r.admin.URL+"/api/breakers/"+url.PathEscape(name)+"/"+action, strings.NewReader(`{"reason":"drill"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out admin.ActionResult
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Equal(t, http.StatusOK, res.StatusCode)
	return *out.Breaker
}

// scrape reads /metrics over HTTP, as Prometheus does, and parses it.
func (r *replica) scrape(t *testing.T) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	res, err := http.Get(r.metrics.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "the scrape failed: %s", raw)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	require.NoError(t, err)
	return fams, string(raw)
}

// counter reads a label-free counter; local reads agentbreaker_fleet_local by dependency.
func counter(fams map[string]*dto.MetricFamily, name string) float64 {
	mf := fams[name]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return -1
	}
	return mf.GetMetric()[0].GetCounter().GetValue()
}

func localGauge(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams["agentbreaker_fleet_local"].GetMetric() {
		out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	return out
}

// TestFleetScopeAndMetricsWhenRedisIsCut: with Redis reachable, every attached breaker
// is "fleet" on the admin page and agentbreaker_fleet_local reads 0; an operator's
// force-open on one replica's page reaches the other replica. Cut Redis from that
// replica: its breakers turn "local" (1), the sync failures and the outage are counted,
// and an action taken meanwhile is "local". Let Redis back: "fleet" again, the local
// action reaches the other replica, and the sync count grows again. Hostile names go
// through the page and the scrape untouched: no scrape error, no markup in the JSON.
func TestFleetScopeAndMetricsWhenRedisIsCut(t *testing.T) {
	t.Parallel()
	addr := testenv.RedisAddr(t)
	app := fleetApp(t, addr)
	proxy, err := faultproxy.New(addr)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })

	a := newReplica(t, proxy.Addr(), app, "replica-a") // through the proxy
	b := newReplica(t, addr, app, "replica-b")         // straight to Redis
	for _, r := range []*replica{a, b} {
		for _, name := range fleetHostile {
			_, err := r.deps.ForTool(name)
			require.NoError(t, err)
		}
	}
	_, err = a.deps.ForTool(unattachable)
	require.NoError(t, err, "the map keeps the breaker; the fleet leaves it local")
	attached := append([]string{"crm"}, fleetHostile...)

	const limit = 10 * time.Second
	allScopes := func(r *replica, want string) func() bool {
		return func() bool {
			got := r.scopes(t)
			for _, n := range attached {
				if got[n] != want {
					return false
				}
			}
			return true
		}
	}
	testenv.WaitFor(t, limit, "every attached breaker of a is fleet-wide", allScopes(a, admin.ScopeFleet))
	testenv.WaitFor(t, limit, "every attached breaker of b is fleet-wide", allScopes(b, admin.ScopeFleet))

	st, raw := a.state(t)
	require.NotContains(t, st[unattachable], "scope", "a breaker the fleet refused has no scope")
	require.Contains(t, st, "bad\ufffd\x1b[31mname", "JSON carries the name as text (invalid UTF-8 replaced)")
	require.NotContains(t, raw, "<img", "markup in names is escaped in the JSON")
	require.NotContains(t, raw, "<script", "markup in names is escaped in the JSON")

	fams, text := a.scrape(t)
	local := localGauge(fams)
	for _, n := range attached {
		require.Equal(t, 0.0, local[n], "agentbreaker_fleet_local{dependency=%q}", n)
	}
	require.NotContains(t, local, unattachable)
	require.NotContains(t, local, "bad\ufffd\ufffd[31mname", "an unattached breaker has no fleet row")
	require.NotContains(t, text, "\xff")
	require.NotContains(t, text, "\x1b")
	// (A sync that timed out on a loaded machine counts as an outage too: compare with
	// the values before the cut, not with 0.)
	failuresBefore, outagesBefore := counter(fams, "agentbreaker_fleet_sync_failures_total"), counter(fams, "agentbreaker_fleet_outages_total")
	require.Positive(t, counter(fams, "agentbreaker_fleet_syncs_total"))
	require.Positive(t, counter(fams, "agentbreaker_fleet_redis_commands_total"))
	require.GreaterOrEqual(t, failuresBefore, 0.0)
	require.GreaterOrEqual(t, outagesBefore, 0.0)

	// An operator action on a's page goes fleet-wide: b's breaker follows.
	hostile := fleetHostile[0]
	after := a.act(t, hostile, "force-open")
	require.Equal(t, "forced_open", after.State)
	require.Equal(t, admin.ScopeFleet, after.Scope)
	bHostile, _ := b.deps.Get(hostile)
	testenv.WaitFor(t, limit, "b learns of the force-open made on a's page", func() bool { return bHostile.State() == breaker.ForcedOpen })

	// Cut Redis from a.
	proxy.Set(faultproxy.Cut)
	testenv.WaitFor(t, limit, "a's breakers decide alone", allScopes(a, admin.ScopeLocal))
	testenv.WaitFor(t, limit, "the scrape shows a's breakers local and the failures counted", func() bool {
		fams, _ := a.scrape(t)
		local := localGauge(fams)
		for _, n := range attached {
			if local[n] != 1 {
				return false
			}
		}
		return counter(fams, "agentbreaker_fleet_sync_failures_total") > failuresBefore &&
			counter(fams, "agentbreaker_fleet_outages_total") > outagesBefore
	})
	require.Equal(t, admin.ScopeFleet, b.scopes(t)["crm"], "b still reaches Redis")

	// An action during the outage applies on a at once, as a local one.
	crmA, _ := a.deps.Get("crm")
	crmB, _ := b.deps.Get("crm")
	after = a.act(t, "crm", "force-closed")
	require.Equal(t, "forced_closed", after.State)
	require.Equal(t, admin.ScopeLocal, after.Scope)
	require.Equal(t, breaker.ForcedClosed, crmA.State())
	require.Equal(t, breaker.Closed, crmB.State(), "b cannot know yet")

	// Redis is back: fleet-wide again, and the local action reaches b.
	fams, _ = a.scrape(t)
	syncsCut := counter(fams, "agentbreaker_fleet_syncs_total")
	proxy.Set(faultproxy.Pass)
	testenv.WaitFor(t, limit, "a's breakers follow the fleet again", allScopes(a, admin.ScopeFleet))
	testenv.WaitFor(t, limit, "the scrape shows a's breakers fleet-wide and syncing", func() bool {
		fams, _ := a.scrape(t)
		local := localGauge(fams)
		for _, n := range attached {
			if local[n] != 0 {
				return false
			}
		}
		return counter(fams, "agentbreaker_fleet_syncs_total") > syncsCut
	})
	testenv.WaitFor(t, limit, "b learns of the force-closed made on a during the outage", func() bool { return crmB.State() == breaker.ForcedClosed })
	fams, _ = a.scrape(t)
	require.Greater(t, counter(fams, "agentbreaker_fleet_sync_failures_total"), failuresBefore, "counters never go back")
}
