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

	// While shedding, the throttle learns the mix: here a quarter of each priority.
	for range 10 {
		for _, pr := range throttle.Priorities() {
			th.Allow(pr)
		}
	}
	for _, pr := range throttle.Priorities() {
		fmt.Printf("%s calls refused with probability %.2f\n", pr, th.ShedProbability(0.5, pr))
	}

	fc.Advance(time.Minute) // the window forgets
	fmt.Println("after a quiet minute:", th.Probability())
	// Output:
	// shedding 0.50 of low calls
	// low calls refused with probability 1.00
	// normal calls refused with probability 1.00
	// high calls refused with probability 0.00
	// critical calls refused with probability 0.00
	// after a quiet minute: 0
}
