package hops_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/internal/hops"
)

// The AgentTool shape's first turn, without agentbreaker and with the retry budget.
func ExampleRun() {
	for _, m := range []hops.Mode{hops.None, hops.Budget} {
		f, err := hops.Run(hops.Shapes[1], hops.Config{Mode: m, Turns: 1})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(m, f.PerTurn[0])
	}
	// Output:
	// none 18
	// budget 2
}
