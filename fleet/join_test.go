package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// TestAJoiningBreakerLearnsAnOpenFleetFirst (found by the soak, issue 46): a breaker
// that joins the fleet during an outage the fleet knows, in a replica started then or
// made on demand in a running replica, admits no call: it is synced before AttachMap
// returns, or before the call that made it gets it. Before, it decided alone, closed,
// until its replica's next sync (58 calls in 104 ms in the soak).
func TestAJoiningBreakerLearnsAnOpenFleetFirst(t *testing.T) {
	addr, app := testApp(t)
	const interval = 2 * time.Second // far longer than the checks: only the join's sync can tell them
	join := func(replica string, deps map[string]dependencymap.Dependency) *dependencymap.Map {
		m := dependencymap.MustNew(dependencymap.Config{Default: testPolicy(time.Minute), Dependencies: deps})
		require.NoError(t, newFleet(t, addr, app, replica, interval).AttachMap(m))
		return m
	}
	billing := map[string]dependencymap.Dependency{"billing": {Tools: []string{"billing_lookup"}}}
	ma := join("a", billing)
	b, _ := ma.Get("billing")
	b.ForceOpen("billing is down")
	// Replica a publishes the operator's change at once (an operated breaker wakes its
	// loop); wait until Redis holds it.
	probe := join("probe", billing)
	testenv.WaitFor(t, 10*time.Second, "the fleet holds billing forced open", func() bool {
		pb, _ := probe.Get("billing")
		return pb.State() == breaker.ForcedOpen
	})

	t.Run("a replica started during the outage", func(t *testing.T) {
		m := join("b", billing)
		bb, _ := m.Get("billing")
		_, err := bb.Allow()
		require.Error(t, err, "the new replica's first call was admitted while the fleet's breaker is open")
	})
	t.Run("a breaker made on demand in a running replica", func(t *testing.T) {
		m := join("c", map[string]dependencymap.Dependency{"orders": {Tools: []string{"lookup_order"}}})
		bb, err := m.ForTool("billing") // unannotated: a breaker of its own, named billing, made now
		require.NoError(t, err)
		_, err = bb.Allow()
		require.Error(t, err, "the breaker made on demand admitted a call while the fleet's breaker is open")
	})
}
