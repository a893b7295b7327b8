package telemetry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestProbeResultsBySource (issue 24g): a user call's probe and the dependency's
// health probes are counted apart in agentbreaker_breaker_probe_results_total, and the
// transitions a health probe made are logged as such.
func TestProbeResultsBySource(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := breaker.MustNew(breaker.Config{Name: "crm", Clock: f.clock, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent}})
	f.tel.Watch(breakerList{b})
	trip := func() {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	trip()
	f.clock.Advance(30 * time.Second)
	p, err := b.Allow() // no prober yet: a user's call probes, and fails
	require.NoError(t, err)
	p.Failure()

	var healthy atomic.Bool
	pr := probe.MustNew(probe.Config{Checks: []probe.Check{{Breaker: b, Func: func(context.Context) error {
		if healthy.Load() {
			return nil
		}
		return errors.New("down")
	}}}, Clock: f.clock, Logger: slog.New(slog.DiscardHandler)})
	defer pr.Close()
	f.clock.Advance(30 * time.Second)
	pr.ProbeDue(t.Context()) // fails
	healthy.Store(true)
	f.clock.Advance(30 * time.Second)
	pr.ProbeDue(t.Context()) // closes
	require.Equal(t, breaker.Closed, b.State())

	f.compare(t, `
# HELP agentbreaker_breaker_probe_results_total Half-open probe rounds that settled, by source (health_probe: the dependency's own probe; user_call: a user's call) and result (succeeded, failed). A series appears with its first probe of that source and result.
# TYPE agentbreaker_breaker_probe_results_total counter
agentbreaker_breaker_probe_results_total{dependency="crm",result="failed",source="health_probe"} 1
agentbreaker_breaker_probe_results_total{dependency="crm",result="failed",source="user_call"} 1
agentbreaker_breaker_probe_results_total{dependency="crm",result="succeeded",source="health_probe"} 1
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="crm",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="failed"} 2
agentbreaker_breaker_probes_total{dependency="crm",result="succeeded"} 1
`, "agentbreaker_breaker_probe_results_total", "agentbreaker_breaker_probes_total")
	closed := f.logs.withMsg(t, "agentbreaker: breaker state changed")
	last := closed[len(closed)-1]
	require.Equal(t, "health probe succeeded", last["reason"])
	require.Equal(t, true, last["health_probe"])
}
