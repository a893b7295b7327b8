package clock_test

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

func ExampleFake() {
	f := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	f.Advance(90 * time.Second)
	fmt.Println(f.Now().Format(time.TimeOnly))
	// Output:
	// 09:01:30
}
