// Command guard is row (b) of the weight table: adk-go with breaker, dependencymap and
// the callbacks plugin.
package main

import (
	"log"

	"github.com/agentbreaker/agentbreaker/bench/weight/app"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func main() {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	if err := app.Run(guard.Plugin()); err != nil {
		log.Fatal(err)
	}
}
