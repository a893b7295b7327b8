package probe_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/probe"
)

// Start probes with no Run of the caller's: a breaker that opened is closed by its
// health probe once the cooldown has passed, and Close ends the probing goroutine
// (the package's TestMain fails on a leaked one). prober.Run was a call a newcomer
// nearly forgot (issue 48, item 1).
func TestStartProbesWithoutRun(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC))
	probed := make(chan struct{}, 1)
	m := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		Dependencies: map[string]dependencymap.Dependency{"kb": {Tools: []string{"search"},
			Probe: &dependencymap.Probe{Func: func(context.Context) error { return nil }}}}})
	b, _ := m.Get("kb")
	pm, _ := b.Allow()
	pm.Failure()
	require.Equal(t, breaker.Open, b.State())
	// Sleep moves the fake clock instead of waiting, until the first probe; then it
	// waits for the end.
	sleep := func(ctx context.Context, d time.Duration) error {
		if len(probed) == 0 {
			clk.Advance(d)
			return ctx.Err()
		}
		<-ctx.Done()
		return ctx.Err()
	}
	p, err := probe.Start(t.Context(), m, probe.Config{Logger: slog.New(slog.DiscardHandler), Sleep: sleep,
		OnResult: []func(probe.Result){func(r probe.Result) {
			if r.Healthy {
				probed <- struct{}{}
			}
		}}})
	require.NoError(t, err)
	select {
	case <-probed:
	case <-t.Context().Done():
		t.Fatal("no probe ran")
	}
	p.Close()
	require.Equal(t, breaker.Closed, b.State())
	require.False(t, b.HasProber(), "Close detached the prober")
}

func TestStartWithoutProbes(t *testing.T) {
	p, err := probe.Start(t.Context(), dependencymap.MustNew(dependencymap.Config{}), probe.Config{})
	require.NoError(t, err)
	require.Nil(t, p)
	p.Close()
}
