package bulkhead_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/bulkhead"
)

func Example() {
	b := bulkhead.MustNew(bulkhead.Config{Name: "enrichment", Limit: 2})
	for i := range 3 {
		if err := b.TryAcquire(); err != nil {
			fmt.Println("call", i, "rejected:", err)
			continue
		}
		fmt.Println("call", i, "admitted")
	}
	b.Release()
	fmt.Println("in use:", b.InUse())
	// Output:
	// call 0 admitted
	// call 1 admitted
	// call 2 rejected: bulkhead: enrichment is full (2 calls in progress)
	// in use: 1
}
