package sim_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// TestProbeStrategy (issue 24f): the design document's incident with a health probe
// every 30 s: no user call reaches the dependency after the breaker trips, every
// probe is a health check (one per interval, without growth, through a long outage),
// and the breaker closes within one probe interval of the recovery.
func TestProbeStrategy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		multiplier float64
	}{{"fixed cooldown", 1}, {"growing cooldown", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.DefaultScenario()
			s.Duration, s.OutageEnd = 70*time.Minute, 62*time.Minute
			s.Policy.CooldownMultiplier = tc.multiplier
			s.Strategies = []string{sim.StrategyPolicy, sim.StrategyProbe}
			res, err := sim.Run(s, sim.Options{})
			require.NoError(t, err)
			policy, probe := res.Strategies[0].Summary, res.Strategies[1].Summary
			require.Zero(t, probe.CallsAfterTrip, "no user call after the trip")
			require.NotNil(t, probe.TripAfterOnset)
			require.NotNil(t, probe.CloseAfterRecovery)
			require.LessOrEqual(t, *probe.CloseAfterRecovery, 30.0, "closed within one probe interval of the recovery")
			outage := s.OutageEnd - s.OutageStart - time.Duration(*probe.TripAfterOnset*float64(time.Second))
			// One health probe per interval, without growth: each interval is stretched by
			// the policy's jitter (up to 10%), never grown.
			most := int(outage / sim.ProbeInterval)
			least := int(float64(outage) / (float64(sim.ProbeInterval) * 1.1))
			require.GreaterOrEqual(t, probe.ProbesDuringOutage, least, "one health probe per interval, no growth")
			require.LessOrEqual(t, probe.ProbesDuringOutage, most, "one health probe per interval, no growth")
			require.Less(t, probe.CallsDuringOutage, policy.CallsDuringOutage, "user-call probes reach the dependency; health probes replace them")
			if tc.multiplier > 1 {
				require.Greater(t, *policy.CloseAfterRecovery, 60.0, "a grown cooldown notices the recovery late")
			}
		})
	}
}

func TestProbeStrategyIsOptIn(t *testing.T) {
	require.False(t, slices.Contains(sim.Strategies(), sim.StrategyProbe), "the default output is unchanged")
	s := sim.DefaultScenario()
	s.Strategies = []string{sim.StrategyProbe}
	require.NoError(t, s.Validate())
	s.Strategies = []string{"agentbreaker-probes"}
	require.ErrorContains(t, s.Validate(), "agentbreaker-probes")
}
