package throttle_test

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

func Example() {
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Name: "search", Clock: fc, K: 2, MinRequests: 20})

	// 100 calls were sent; the dependency handled one in four, the others came back 503.
	for i := range 100 {
		c := classify.ForClass(classify.ClassNone)
		if i%4 != 0 {
			c = classify.ForClass(classify.ClassHTTP5xx)
			c.Outcome = classify.Failed
		}
		if accepted, counted := throttle.Judge(c); counted {
			th.Report(accepted)
		}
	}
	p := th.Probability()
	fmt.Printf("shedding %.2f of low calls\n", p)
	fmt.Printf("a critical call is refused with probability %.2f\n", th.ShedProbability(p, throttle.Critical))

	fc.Advance(time.Minute) // the window forgets
	fmt.Println("after a quiet minute:", th.Probability())
	// Output:
	// shedding 0.50 of low calls
	// a critical call is refused with probability 0.00
	// after a quiet minute: 0
}
