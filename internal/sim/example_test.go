package sim_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// The design document's incident, with the naive strategy and the user's policy.
func ExampleRun() {
	res, err := sim.Run(sim.Scenario{Strategies: []string{sim.StrategyNaive, sim.StrategyPolicy}}, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Strategies {
		m := s.Summary
		fmt.Printf("%s: %d calls reached the dependency during the outage; %d outage turns failed\n",
			s.Name, m.CallsDuringOutage, m.OutageTurns.Failed)
	}
	// Output:
	// naive: 5833 calls reached the dependency during the outage; 470 outage turns failed
	// agentbreaker-policy: 32 calls reached the dependency during the outage; 0 outage turns failed
}
