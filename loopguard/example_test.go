package loopguard_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/loopguard"
)

// The second short-circuit of a dependency in one invocation turns firm, and after the
// first short-circuit the model gets a bounded number of further calls.
func Example() {
	g := loopguard.MustNew(loopguard.Config{FirmAfter: 2, MaxModelCallsWhileOpen: 2})
	tr := g.Track() // one per invocation

	fmt.Println(tr.ShortCircuit("enrichment"))
	fmt.Println(tr.ShortCircuit("enrichment"))
	for range 3 {
		n, ok := tr.ModelCall()
		fmt.Println("model call", n, "allowed:", ok)
	}
	fmt.Println(g.CapResponse(tr).Content.Parts[0].Text)
	// Output:
	// {1 false false}
	// {2 true true}
	// model call 1 allowed: true
	// model call 2 allowed: true
	// model call 3 allowed: false
	// I could not finish this request because enrichment is unavailable right now. Please try again later.
}
