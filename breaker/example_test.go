package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

func Example() {
	fc := clock.NewFake(time.Time{}) // tests and examples move time by hand
	b, err := breaker.New(breaker.Config{
		Name:   "crm",
		Clock:  fc,
		Policy: breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1},
		OnStateChange: []func(breaker.Event){func(e breaker.Event) {
			fmt.Printf("%s: %s -> %s (%s)\n", e.Breaker, e.From, e.To, e.Reason)
		}},
	})
	if err != nil {
		panic(err)
	}

	// Four failed calls: both gates are crossed.
	for range 4 {
		p, err := b.Allow()
		if err != nil {
			panic(err)
		}
		p.Failure()
	}

	_, err = b.Allow()
	var open *breaker.OpenError
	if errors.As(err, &open) {
		fmt.Println("rejected; retry in", open.RetryAfter())
	}

	fc.Advance(30 * time.Second)
	probe, _ := b.Allow()
	fmt.Println("probe:", probe.IsProbe())
	probe.Success()
	fmt.Println("state:", b.State())
	// Output:
	// crm: closed -> open (failure rate 100% over 4 calls ≥ 50%)
	// rejected; retry in 30s
	// crm: open -> half_open (cooldown elapsed; letting a probe through)
	// probe: true
	// crm: half_open -> closed (probe succeeded)
	// state: closed
}

func ExamplePermit_Report() {
	fc := clock.NewFake(time.Time{})
	b := breaker.MustNew(breaker.Config{Name: "gemini/us-central1", Clock: fc,
		Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}})

	// A 429 that asks for 40 seconds: the floor beats the 30-second cooldown.
	p, _ := b.Allow()
	p.Report(breaker.Report{Verdict: breaker.Failure, RetryAfter: 40 * time.Second})
	fmt.Println(b.State(), b.RetryAfter())
	// Output:
	// open 40s
}

func ExampleBreaker_ForceOpen() {
	b := breaker.MustNew(breaker.Config{Name: "payments"})
	b.ForceOpen("provider maintenance window")
	_, err := b.Allow()
	fmt.Println(errors.Is(err, breaker.ErrOpen), b.State())
	b.Reset("maintenance over")
	fmt.Println(b.State())
	// Output:
	// true forced_open
	// closed
}

// A count-based window: the last ten calls, however long ago they were made, so a tool
// called twice an hour still trips on its recent history.
func ExamplePolicy_windowCalls() {
	fc := clock.NewFake(time.Time{})
	b := breaker.MustNew(breaker.Config{Name: "ledger", Clock: fc,
		Policy: breaker.Policy{WindowCalls: 10, MinimumCalls: 10, Jitter: -1}})
	report := func(ok bool) {
		p, err := b.Allow()
		if err != nil {
			panic(err)
		}
		if ok {
			p.Success()
		} else {
			p.Failure()
		}
		fc.Advance(30 * time.Minute)
	}
	for range 6 {
		report(true)
	}
	for range 4 {
		report(false)
	}
	fmt.Println(b.State(), b.Snapshot().Window)
	report(false) // pushes out the oldest success: 5 failures of the last 10
	fmt.Println(b.State())
	// Output:
	// closed {10 4 0}
	// open
}
