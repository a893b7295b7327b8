package dependencymap_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// A running map takes new policies without a restart: the open breaker stays open.
func ExampleMap_Apply() {
	cfg := dependencymap.Config{PolicyVersion: "v1", Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 2}},
	}}
	m := dependencymap.MustNew(cfg)
	crm, _ := m.Get("crm")
	for range 2 {
		p, _ := crm.Allow()
		p.Failure()
	}
	cfg.PolicyVersion = "v2"
	cfg.Dependencies["crm"] = dependencymap.Dependency{Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 10}}
	if err := m.Apply(cfg); err != nil {
		fmt.Println(err)
	}
	fmt.Println(crm.State(), crm.Policy().Version, crm.Policy().MinimumCalls)

	cfg.Dependencies["crm"] = dependencymap.Dependency{Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: -1}}
	fmt.Println(m.Apply(cfg))
	// Output:
	// open v2 10
	// dependencymap: Dependencies["crm"].Policy.MinimumCalls = -1: must be at least 1
}
