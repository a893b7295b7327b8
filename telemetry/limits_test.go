package telemetry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 34 (f): the adaptive limit, its floor, the measured no-load latency and the
// refusals by priority, read at scrape time from the dependency map.
func TestAdaptiveLimitMetrics(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 5, MinSamples: 2, UpdateInterval: time.Second}},
		"crm":    {Tools: []string{"lookup"}},
	}})
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: fc})
	tel.WatchLimits(deps)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP agentbreaker_adaptive_limit The dependency's adaptive concurrency limit in force: how many of its calls may be in flight (the share of it each priority may fill is in docs/adaptive-concurrency.md).
# TYPE agentbreaker_adaptive_limit gauge
agentbreaker_adaptive_limit{dependency="search"} 5
# HELP agentbreaker_adaptive_limit_min The floor of the dependency's adaptive concurrency limit (MinLimit): a limit that stays there means the dependency stays slow.
# TYPE agentbreaker_adaptive_limit_min gauge
agentbreaker_adaptive_limit_min{dependency="search"} 1
# HELP agentbreaker_adaptive_limit_no_load_seconds The no-load latency the dependency's adaptive limit measured (0 until measured), in seconds.
# TYPE agentbreaker_adaptive_limit_no_load_seconds gauge
agentbreaker_adaptive_limit_no_load_seconds{dependency="search"} 0
`), "agentbreaker_adaptive_limit", "agentbreaker_adaptive_limit_min", "agentbreaker_adaptive_limit_no_load_seconds"))

	l := deps.Limiter("search")
	// Two calls at 250ms: the no-load latency.
	for range 2 {
		p, err := l.Acquire(throttle.Normal)
		require.NoError(t, err)
		fc.Advance(250 * time.Millisecond)
		p.Done()
	}
	fc.Advance(time.Second)
	p, err := l.Acquire(throttle.Normal)
	require.NoError(t, err)
	fc.Advance(250 * time.Millisecond)
	p.Done()
	require.InDelta(t, 0.25, gatherFloat(t, reg, "agentbreaker_adaptive_limit_no_load_seconds", map[string]string{"dependency": "search"}), 1e-9)

	// Hold 3 of 5: a Low call (60%) is refused, a Normal one (80%) admitted, then refused.
	for range 3 {
		_, err := l.Acquire(throttle.Critical)
		require.NoError(t, err)
	}
	_, err = l.Acquire(throttle.Low)
	require.Error(t, err)
	_, err = l.Acquire(throttle.Normal)
	require.NoError(t, err)
	_, err = l.Acquire(throttle.Normal)
	require.Error(t, err)
	for pr, want := range map[string]float64{"low": 1, "normal": 1, "high": 0, "critical": 0} {
		require.InDelta(t, want, gatherFloat(t, reg, "agentbreaker_adaptive_limit_refused_total", map[string]string{"dependency": "search", "priority": pr}), 0, pr)
	}
	require.InDelta(t, float64(l.Limit()), gatherFloat(t, reg, "agentbreaker_adaptive_limit", map[string]string{"dependency": "search"}), 0)
}
