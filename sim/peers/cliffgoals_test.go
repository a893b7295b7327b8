package peers_test

import (
	"math"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/sim"
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
	nearLeast(t, 1, h)
	// Across seeds, the cliff's goals hold on every one; the incident's goal is
	// logged, not asserted (nearLeast is).
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
		nearLeast(t, seed, h)
		for i, g := range goals {
			switch {
			case i < 3 && !g.Met:
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

// nearLeast checks the incident's adaptive row against the least any guard can block.
// The incident's goal (half of today's) cannot hold in general (docs/adaptive-concurrency.md
// says why): no guard that does not count its own refusals blocks less before the trip
// than the timeouts the policy needs to open, and half of today's row is below that on
// some seeds. The limit keeps within one hung call of that least cost.
func nearLeast(t *testing.T, seed uint64, h *sim.HangResult) {
	t.Helper()
	timeout := h.Incident.Timeout.Seconds()
	least := math.Ceil(h.Policy.FailureRateThreshold*float64(h.Policy.MinimumCalls)) * timeout
	if with, _ := h.Row(sim.HangAdaptive); with.BlockedWorkerSeconds > least+timeout {
		t.Errorf("seed %d: incident: %.1f blocked worker-s before the trip with the limit; want at most %.1f (the timeouts that trip the breaker) plus one hung call", seed, with.BlockedWorkerSeconds, least)
	}
}
