package peers_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/sim/peers"
)

// Issue 25 (f): at 60% failing, agentbreaker's throttle rows are no worse than
// failsafe-go's adaptivethrottler in the same run on live data or on calls sent per
// success, and send at most 1.5 calls per success. The tables of
// docs/partial-outages.md come from ./cmd/partialtable, which test/docs runs.
func TestThrottleRowsNoWorseThanFailsafeGoAt60(t *testing.T) {
	prs, err := peers.RunPartial(t, 0.6)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + prs[0].Table())
	rows := map[string]sim.Row{}
	for _, r := range prs[0].Rows() {
		rows[r.Name] = r
	}
	peer, ok := rows[peers.FailsafeThrottler().Name]
	if !ok {
		t.Fatalf("no %s row", peers.FailsafeThrottler().Name)
	}
	for _, name := range []string{sim.StrategyThrottle, sim.StrategyBreakerThrottle} {
		r := rows[name]
		if r.LiveTurns < peer.LiveTurns {
			t.Errorf("%s: live data %.1f%% < failsafe-go's %.1f%%", name, 100*r.LiveTurns, 100*peer.LiveTurns)
		}
		if r.Waste > peer.Waste || r.Waste > 1.5 {
			t.Errorf("%s: %.2f calls sent per success (failsafe-go %.2f, goal 1.5)", name, r.Waste, peer.Waste)
		}
	}
}
