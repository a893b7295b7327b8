package dependencymap_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func Example() {
	m, err := dependencymap.New(dependencymap.Config{
		PolicyVersion: "v1",
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {
				Tools:  []string{"lookup_customer", "update_customer"},
				Policy: breaker.Policy{MinimumCalls: 10},
			},
		},
	})
	if err != nil {
		panic(err)
	}
	lookup, _ := m.ForTool("lookup_customer")
	update, _ := m.ForTool("update_customer")
	weather, _ := m.ForTool("get_weather") // unannotated: a breaker of its own
	fmt.Println(lookup == update, lookup.Name(), weather.Name())
	// Output:
	// true crm get_weather
}
