package peers

import (
	"testing"
	"testing/synctest"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// Failing are the shares of failing calls docs/partial-outages.md shows.
var Failing = []float64{0.3, 0.6, 0.9}

// RunPartial runs the simulator's partial outage at each share of failing calls, with
// failsafe-go's throttler as the last row, and returns the results in that order. It
// runs them inside a testing/synctest bubble (see the package doc), which is why it
// takes t; it must not be called from inside one.
func RunPartial(t *testing.T, failing ...float64) ([]*sim.PartialResult, error) {
	var out []*sim.PartialResult
	var err error
	synctest.Test(t, func(*testing.T) {
		for _, f := range failing {
			var pr *sim.PartialResult
			pr, err = sim.RunPartial(sim.Partial{Failing: f, Peers: []sim.Peer{FailsafeThrottler()}}, sim.Options{})
			if err != nil {
				return
			}
			out = append(out, pr)
		}
	})
	return out, err
}
