package stripe_test

import (
	"fmt"
	"sync/atomic"

	"github.com/agentbreaker/agentbreaker/internal/stripe"
)

// A striped counter: each caller adds to its stripe, a reader sums them.
func Example() {
	var counts [stripe.Count]struct {
		n atomic.Int64
		_ [56]byte // one cache line per stripe
	}
	for range 1000 {
		counts[stripe.ByStack()].n.Add(1)
		counts[stripe.ByProcessor()].n.Add(1)
	}
	var sum int64
	for i := range counts {
		sum += counts[i].n.Load()
	}
	fmt.Println(sum)
	// Output: 2000
}
