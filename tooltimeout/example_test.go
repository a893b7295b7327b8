package tooltimeout_test

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// A tool with a 5s timeout, retried three times with 1.5s of backoff, does not fit in
// a sub-agent given 10s: the configuration is rejected with the arithmetic.
func ExampleLayers_Validate() {
	err := tooltimeout.Layers{
		ToolTimeout: 5 * time.Second,
		Attempts:    3,
		Backoff:     1500 * time.Millisecond,
		SubAgent:    10 * time.Second,
		Turn:        30 * time.Second,
	}.Validate()
	fmt.Println(err)
	// Output:
	// tooltimeout: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s
}
