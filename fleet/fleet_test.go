package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// Two replicas in one process, each with its own client: a trip on one reaches the
// other within a sync, one of them probes after the cooldown, and its success closes
// both.
func TestTripReachesEveryReplicaAndOneProbeCloses(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	const interval = 100 * time.Millisecond
	fa, fb := newFleet(t, addr, app, "a", interval), newFleet(t, addr, app, "b", interval)
	a := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(500 * time.Millisecond)})
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(500 * time.Millisecond)})
	require.NoError(t, fa.Attach(a))
	require.NoError(t, fb.Attach(b))
	eventually(t, 5*time.Second, "both fleet-wide", func() bool {
		sa, _ := fa.Status("crm")
		sb, _ := fb.Status("crm")
		return sa.FleetWide && sb.FleetWide
	})
	fail(a, 10)
	require.Equal(t, breaker.Open, a.State())
	eventually(t, 5*time.Second, "b learns of a's trip", func() bool { return b.State() == breaker.Open })

	// After the cooldown, both want to call; exactly one probes.
	probes := 0
	eventually(t, 5*time.Second, "a probe", func() bool {
		for _, x := range []*breaker.Breaker{a, b} {
			if p, err := x.Allow(); err == nil {
				require.True(t, p.IsProbe())
				probes++
				p.Success()
			}
		}
		return probes > 0
	})
	eventually(t, 5*time.Second, "both closed", func() bool {
		return a.State() == breaker.Closed && b.State() == breaker.Closed
	})
	require.Equal(t, 1, probes)
	h := history(t, addr, histKey(fa, "crm"))
	checkHistory(t, h)
	require.Len(t, h, 3, "%+v", h)
}
