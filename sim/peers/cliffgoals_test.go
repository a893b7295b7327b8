package peers_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/sim"
	"github.com/agentbreaker/agentbreaker/sim/peers"
)

// Issue 34 (e): the goals docs/adaptive-concurrency.md prints, checked on the same
// runs (seed 1): a missed goal fails here, not as drift of the page.
func TestCliffGoals(t *testing.T) {
	c, err := peers.RunCliff(t, sim.Cliff{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := sim.RunHangIncident(sim.HangIncident{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + c.Table() + "\n" + h.Table())
	goals, err := peers.CliffGoals(c, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(goals) != 4 {
		t.Fatalf("%d goals, want 4", len(goals))
	}
	for _, g := range goals {
		if !g.Met {
			t.Errorf("%s: %s, bound %s", g.Text, g.Got, g.Bound)
		}
	}
	// Across seeds, the latency goals hold on every one; goodput against failsafe-go's
	// and the incident's goal are logged, not asserted: they do not hold on every seed
	// (docs/adaptive-concurrency.md says why and prints the table).
	for _, seed := range []uint64{2, 3, 4} {
		c, err := peers.RunCliff(t, sim.Cliff{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		h, err := sim.RunHangIncident(sim.HangIncident{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		goals, err := peers.CliffGoals(c, h)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range goals {
			switch {
			case (i == 1 || i == 2) && !g.Met:
				t.Errorf("seed %d: %s: %s, bound %s", seed, g.Text, g.Got, g.Bound)
			case !g.Met:
				t.Logf("seed %d: %s: %s, bound %s: not met", seed, g.Text, g.Got, g.Bound)
			}
		}
	}
	// The comparison is not empty: the fixed bulkhead's p99 passes 2× the no-load
	// latency, and the no-limit row falls off the cliff.
	bh, _ := c.Row(sim.CliffBulkhead)
	none, _ := c.Row(sim.CliffNoLimit)
	if bh.P99 <= 2*c.Cliff.Service || none.TimedOut == 0 {
		t.Errorf("the cliff does not bite: bulkhead p99 %v, no-limit timeouts %d", bh.P99, none.TimedOut)
	}
}
