package throttle_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// A dependency behind a balancer with a bad replica fails 60% of the calls whatever
// the load. With K = 2 the SRE rule alone would shed nearly every call; the throttle
// sees that shedding does not raise the accept ratio, and stops.
func ExampleThrottle_LoadIndependent() {
	fc := clock.NewFake(time.Time{})
	r := rand.New(rand.NewPCG(1, 2))
	th := throttle.MustNew(throttle.Config{Clock: fc, Rand: r.Uint64})
	dependency := rand.New(rand.NewPCG(3, 4))
	sent := 0
	for i := range 20 * 600 { // ten minutes, 20 calls a second
		if th.Allow(throttle.Normal) {
			th.Report(dependency.Float64() < 0.4)
			if i >= 20*540 {
				sent++ // the last minute
			}
		}
		fc.Advance(50 * time.Millisecond)
	}
	_, ok := th.LoadIndependent()
	fmt.Println("load-independent:", ok)
	fmt.Printf("sent in the last minute: %d of 1200\n", sent)
	fmt.Printf("shedding: %.2f\n", th.Probability())
	// Output:
	// load-independent: true
	// sent in the last minute: 1200 of 1200
	// shedding: 0.00
}
