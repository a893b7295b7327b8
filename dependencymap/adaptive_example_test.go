package dependencymap_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// An adaptive concurrency limit on a tool dependency and on a model endpoint, with
// the priorities the throttle reads deciding who is refused first.
func ExampleDependency_adaptive() {
	deps, err := dependencymap.New(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"search": {
				Tools:      []string{"web_search", "suggest"},
				Priorities: map[string]throttle.Priority{"suggest": throttle.Low},
				Adaptive:   &adaptivelimit.Config{MinLimit: 2, MaxLimit: 50, Tolerance: 0.4, UpdateInterval: 500 * time.Millisecond},
			},
		},
		Models: []dependencymap.ModelEndpoint{
			{Model: "gemini-2.5-flash", Region: "us-central1", Adaptive: &adaptivelimit.Config{}},
		},
	})
	if err != nil {
		panic(err)
	}
	l := deps.Limiter("search")
	fmt.Println(l.Name(), "limit", l.Limit())
	fmt.Println(deps.Limiter("gemini-2.5-flash@us-central1").Limit())

	// Twelve calls in flight: a Low call (60% of 20) is refused, a Normal one is not.
	for range 12 {
		if _, err := l.Acquire(throttle.Critical); err != nil {
			panic(err)
		}
	}
	_, err = l.Acquire(deps.ThrottleFor("suggest").Priority)
	fmt.Println("suggest refused:", errors.Is(err, adaptivelimit.ErrLimited))
	_, err = l.Acquire(deps.ThrottleFor("web_search").Priority)
	fmt.Println("web_search admitted:", err == nil)
	// Output:
	// search limit 20
	// 20
	// suggest refused: true
	// web_search admitted: true
}
