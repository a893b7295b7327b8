package dependencymap_test

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// TestRandDrivesEveryBreakersJitter: Config.Rand reaches the breakers, so a seeded
// source gives a repeatable cooldown: with a draw of 0 it is the plain cooldown, with a
// draw near 1 it is stretched by almost the whole jitter.
func TestRandDrivesEveryBreakersJitter(t *testing.T) {
	reopen := func(draw float64) time.Duration {
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		m, err := dependencymap.New(dependencymap.Config{
			Default:      breaker.Policy{MinimumCalls: 1, Jitter: 0.5},
			Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
			Clock:        clk,
			Rand:         func() float64 { return draw },
		})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.Get("crm")
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Failure()
		if b.State() != breaker.Open {
			t.Fatalf("state %v after a failure with a gate of 1", b.State())
		}
		return b.RetryAfter()
	}
	if got := reopen(0); got != 30*time.Second {
		t.Errorf("draw 0: open for %v, want the plain 30s cooldown", got)
	}
	if got := reopen(0.99); got < 44*time.Second || got > 45*time.Second {
		t.Errorf("draw 0.99: open for %v, want 30s stretched by almost half", got)
	}
}
