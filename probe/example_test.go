package probe_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/probe"
)

// A breaker that nobody calls closes at the first healthy probe after its dependency
// recovered; user calls never probe it.
func Example() {
	clk := clock.NewFake(time.Time{})
	b := breaker.MustNew(breaker.Config{Name: "crm", Clock: clk,
		Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, CooldownMultiplier: 2, Jitter: -1}})
	up := false
	p := probe.MustNew(probe.Config{
		Checks: []probe.Check{{Breaker: b, Name: "ping", Func: func(context.Context) error {
			if up {
				return nil
			}
			return errors.New("connection refused")
		}}},
		Clock:  clk,
		Logger: slog.New(slog.DiscardHandler),
	})
	defer p.Close()

	permit, _ := b.Allow()
	permit.Failure() // the breaker opens
	for i := range 4 {
		up = i == 3 // the dependency recovers before the fourth probe
		clk.Set(p.ProbeDue(context.Background()))
		_, err := b.Allow()
		fmt.Printf("%s: user call refused: %v\n", clk.Now().Format("15:04:05"), err != nil)
		p.ProbeDue(context.Background())
		fmt.Printf("%s: after the probe: %s\n", clk.Now().Format("15:04:05"), b.State())
	}
	// Output:
	// 00:00:30: user call refused: true
	// 00:00:30: after the probe: open
	// 00:01:00: user call refused: true
	// 00:01:00: after the probe: open
	// 00:01:30: user call refused: true
	// 00:01:30: after the probe: open
	// 00:02:00: user call refused: true
	// 00:02:00: after the probe: closed
}
