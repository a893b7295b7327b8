package soak

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// Found by the soak: calls reached the billing agent while its breaker was open in the
// whole fleet, with no replica's transition to account for them (the billing breaker
// was made on demand, at each replica's first billing call, and one replica process is
// restarted by the schedule). This shows how. A breaker joins the fleet at its
// replica's next sync; until then it decides alone (fleet.Status says FleetWide false)
// and a new breaker is closed: a replica started during an outage, and even more one
// that makes a breaker on demand (an unannotated tool, a2aguard's or mcpguard's key, a
// model endpoint), sends calls to a dependency the fleet knows is down until that sync
// (up to SyncInterval; LocalAfter and more while Redis does not answer).
//
// Issue 46's invariant is that while a breaker is open anywhere in the fleet only
// probes reach its dependency. A joining breaker should learn the fleet's state before
// it admits a call (a sync on attach, with the first calls held or refused until it
// answers or OpTimeout passes), not after.
func TestJoiningReplicaRespectsAnOpenFleetBreaker(t *testing.T) {
	rd := startRedis(t)
	app := "join" + strings.ToLower(rand.Text()[:6])
	join := func(name string, deps map[string]dependencymap.Dependency) (*dependencymap.Map, *fleet.Fleet) {
		m := dependencymap.MustNew(dependencymap.Config{Default: toolPolicy, Dependencies: deps})
		f := fleet.MustNew(fleet.Config{Addr: rd.addr(), App: app, Replica: name, SyncInterval: syncInterval, OpTimeout: opTimeout})
		t.Cleanup(func() { _ = f.Close() })
		if err := f.AttachMap(m); err != nil {
			t.Fatal(err)
		}
		return m, f
	}
	billing := map[string]dependencymap.Dependency{"billing": {Tools: []string{"billing_lookup"}}}
	ma, fa := join("a", billing)
	b, _ := ma.Get("billing")
	b.ForceOpen("soak: billing is down")
	testenv.WaitFor(t, 5*time.Second, "the fleet learns that billing is open", func() bool {
		st, ok := fa.Status("billing")
		return ok && st.FleetWide && st.State != breaker.Closed
	})

	// allowedFor reports how long bb admitted calls, polling every millisecond.
	allowedFor := func(bb *breaker.Breaker) (time.Duration, int) {
		start, admitted := time.Now(), 0
		for time.Since(start) < 3*time.Second {
			p, err := bb.Allow()
			if err != nil {
				return time.Since(start), admitted
			}
			p.Ignore()
			admitted++
			time.Sleep(time.Millisecond)
		}
		return time.Since(start), admitted
	}

	t.Run("a replica started during the outage", func(t *testing.T) {
		m, _ := join("b", billing)
		bb, _ := m.Get("billing")
		if d, n := allowedFor(bb); n > 0 {
			t.Errorf("the new replica admitted %d calls to billing over %v while the fleet's breaker was open", n, d.Round(time.Millisecond))
		}
	})
	t.Run("a breaker made on demand in a synced replica", func(t *testing.T) {
		m, f := join("c", map[string]dependencymap.Dependency{"orders": {Tools: []string{"lookup_order"}}})
		testenv.WaitFor(t, 5*time.Second, "replica c syncs", func() bool {
			st, ok := f.Status("orders")
			return ok && st.FleetWide
		})
		bb, err := m.ForTool("billing") // unannotated: a breaker of its own, made now
		if err != nil {
			t.Fatal(err)
		}
		if d, n := allowedFor(bb); n > 0 {
			t.Errorf("the replica admitted %d calls to billing over %v while the fleet's breaker was open", n, d.Round(time.Millisecond))
		}
	})
}
