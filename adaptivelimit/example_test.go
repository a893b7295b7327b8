package adaptivelimit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/throttle"
)

func Example() {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	l := adaptivelimit.MustNew(adaptivelimit.Config{Name: "crm", InitialLimit: 10, MinSamples: 5, UpdateInterval: time.Second})
	// One second of calls that each take 100ms, ten at a time: the no-load latency.
	// Then a second of calls that take 400ms: four times the no-load latency.
	run := func(from time.Time, latency time.Duration) {
		for i := range 10 {
			at := from.Add(time.Duration(i) * 100 * time.Millisecond)
			p, err := l.AcquireAt(at, throttle.Normal)
			if err != nil {
				continue
			}
			p.DoneAt(at.Add(latency))
		}
	}
	run(start, 100*time.Millisecond)
	run(start.Add(time.Second), 100*time.Millisecond)
	fmt.Println("no-load latency:", l.NoLoad(), "limit:", l.Limit())
	run(start.Add(2*time.Second), 400*time.Millisecond)
	run(start.Add(3*time.Second), 400*time.Millisecond)
	fmt.Println("after slow calls, limit:", l.Limit())

	// Two calls in flight: a third Normal call is admitted, a Low one is not (its share
	// of a limit of 3 is 2).
	at := start.Add(4 * time.Second)
	for range 2 {
		if _, err := l.AcquireAt(at, throttle.Normal); err != nil {
			fmt.Println(err)
		}
	}
	_, err := l.AcquireAt(at, throttle.Low)
	var le *adaptivelimit.LimitError
	fmt.Println("low refused:", errors.As(err, &le), errors.Is(err, adaptivelimit.ErrLimited), le.Allowed, "of", le.Limit)
	_, err = l.AcquireAt(at, throttle.Normal)
	fmt.Println("normal admitted:", err == nil)
	// Output:
	// no-load latency: 100ms limit: 10
	// after slow calls, limit: 3
	// low refused: true true 2 of 3
	// normal admitted: true
}
