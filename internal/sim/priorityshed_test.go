package sim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 43 item 1: low calls are shed before normal ones, in both outage shapes, with
// half the turns low and half normal at 60% failing (the table on
// docs/partial-outages.md). In the capacity shape normal calls are shed only where
// nearly every low call is: over the buckets in which a normal call was shed, at least
// 95% of the low calls were too, and a low call was sent beside at most 5% of the
// normal calls shed. In the load-independent shape the throttle sheds little once it
// has told the shape apart, and what it sheds before is still low calls first; fewer
// than one normal call shed in ten has a low call sent in its bucket, where the share
// shed moved within the bucket.
func TestLowestPriorityFirstInBothShapes(t *testing.T) {
	t.Parallel()
	for _, shape := range sim.Shapes() {
		for seed := uint64(1); seed <= 3; seed++ {
			pr, err := sim.RunPartial(sim.Partial{Failing: 0.6, Shape: shape, LowNormal: true,
				Rows: []string{sim.StrategyThrottle}, Scenario: sim.Scenario{Seed: seed}}, sim.Options{})
			require.NoError(t, err)
			ps, ok := pr.Shed[sim.StrategyThrottle]
			require.True(t, ok, "no counts for the throttle row")
			table := sim.PriorityTable([]*sim.PartialResult{pr})
			low, normal := ps.Share(throttle.Low), ps.Share(throttle.Normal)
			require.Positive(t, ps.Shed[throttle.Normal], "%s seed %d: no normal call shed, nothing to order\n%s", shape, seed, table)
			require.Greater(t, low, normal, "%s seed %d: low calls are not shed first\n%s", shape, seed, table)
			require.Less(t, ps.BesideLow(), 0.1, "%s seed %d\n%s", shape, seed, table)
			if shape == sim.ShapeCapacity {
				require.Greater(t, low, 0.9, "seed %d\n%s", seed, table)
				require.GreaterOrEqual(t, ps.LowShareBesideNormal(), 0.95, "seed %d\n%s", seed, table)
				require.LessOrEqual(t, ps.BesideLow(), 0.05, "seed %d\n%s", seed, table)
			}
		}
	}
}

// Only the rows with a throttle are counted, and Rows picks the rows run.
func TestPartialRowsAndShedCounts(t *testing.T) {
	t.Parallel()
	pr, err := sim.RunPartial(sim.Partial{Failing: 0.6, Rows: []string{sim.StrategyThrottle, sim.StrategyNaive}}, sim.Options{})
	require.NoError(t, err)
	rows := pr.Rows()
	require.Len(t, rows, 2)
	require.Equal(t, sim.StrategyNaive, rows[0].Name, "rows run in row order")
	require.Len(t, pr.Shed, 1)
	// A quarter of the turns at each priority: high calls are asked for and shed too.
	require.Positive(t, pr.Shed[sim.StrategyThrottle].Asked[throttle.High])
	_, err = sim.RunPartial(sim.Partial{Failing: 0.6, Rows: []string{"nope"}}, sim.Options{})
	require.ErrorContains(t, err, "nope")
}
