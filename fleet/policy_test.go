package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Two replicas report the policy version they run; after one applies v2 the fleet has
// not converged, and it has once the other applies it too. The breaker that tripped
// under v1 stays open through the change and the fleet's v2 state holds it.
func TestFleetReportsPolicyVersionsAndConverges(t *testing.T) {
	addr, app := testApp(t)
	cfg := func(version string) dependencymap.Config {
		return dependencymap.Config{PolicyVersion: version, Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup"}, Policy: testPolicy(time.Minute)}}}
	}
	var maps [2]*dependencymap.Map
	var fleets = [2]interface{ PolicyVersions() map[string]string }{}
	for i, name := range []string{"r1", "r2"} {
		maps[i] = dependencymap.MustNew(cfg("v1"))
		f := newFleet(t, addr, app, name, 50*time.Millisecond)
		require.NoError(t, f.AttachMap(maps[i]))
		fleets[i] = f
	}
	sees := func(i int, want map[string]string) {
		t.Helper()
		require.Eventually(t, func() bool {
			got := fleets[i].PolicyVersions()
			return len(got) == len(want) && got["r1"] == want["r1"] && got["r2"] == want["r2"]
		}, 5*time.Second, 5*time.Millisecond, "replica %d sees %v, want %v", i, fleets[i].PolicyVersions(), want)
	}
	sees(0, map[string]string{"r1": "v1", "r2": "v1"})

	crm, _ := maps[0].Get("crm")
	for range 10 {
		p, _ := crm.Allow()
		p.Failure()
	}
	require.Equal(t, breaker.Open, crm.State())
	v2 := cfg("v2")
	d := v2.Dependencies["crm"]
	d.Policy.Version, d.Policy.MinimumCalls = "", 12
	v2.Dependencies["crm"] = d
	require.NoError(t, maps[0].Apply(v2))
	sees(1, map[string]string{"r1": "v2", "r2": "v1"})
	require.NoError(t, maps[1].Apply(v2))
	sees(0, map[string]string{"r1": "v2", "r2": "v2"})
	sees(1, map[string]string{"r1": "v2", "r2": "v2"})
	require.Equal(t, breaker.Open, crm.State(), "the breaker that tripped under v1 closed")
	other, _ := maps[1].Get("crm")
	require.Eventually(t, func() bool { return other.State() == breaker.Open }, 5*time.Second, 5*time.Millisecond,
		"the other replica does not follow the open breaker under v2")
}
