package telemetry_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 25 (e): the share each throttle sheds and its refusals by priority, read at
// scrape time from the dependency map.
func TestThrottleMetrics(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{K: 1, MinRequests: 1, Rand: func() uint64 { return 0 }}},
		"crm":    {Tools: []string{"lookup"}},
	}})
	th, _ := deps.Throttle("search")
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: fc})
	tel.Watch(deps)
	tel.WatchThrottles(deps)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP agentbreaker_throttle_shed_share Share of the dependency's calls its throttle is shedding now (p, the share taken from the lowest priorities first); 0 while it sheds nothing.
# TYPE agentbreaker_throttle_shed_share gauge
agentbreaker_throttle_shed_share{dependency="search"} 0
`), "agentbreaker_throttle_shed_share"))

	for i := range 9 {
		th.Report(i < 3) // 9 requests, 3 accepted: p = 6/10
	}
	shed := map[throttle.Priority]int{}
	for range 3 {
		for _, pr := range []throttle.Priority{throttle.Low, throttle.Critical} {
			if !th.Allow(pr) {
				shed[pr]++
			}
		}
	}
	require.Positive(t, shed[throttle.Low])
	p := th.Probability()
	require.Greater(t, p, 0.5)

	got := gatherFloat(t, reg, "agentbreaker_throttle_shed_share", map[string]string{"dependency": "search"})
	require.InDelta(t, p, got, 1e-9)
	for pr, n := range shed {
		require.InDelta(t, float64(n), gatherFloat(t, reg, "agentbreaker_throttle_shed_total",
			map[string]string{"dependency": "search", "priority": pr.String()}), 0, pr.String())
	}
	require.Zero(t, gatherFloat(t, reg, "agentbreaker_throttle_shed_total", map[string]string{"dependency": "search", "priority": "high"}),
		"every priority's counter exists from the first scrape")

	fc.Advance(time.Minute) // the window forgets
	require.Zero(t, gatherFloat(t, reg, "agentbreaker_throttle_shed_share", map[string]string{"dependency": "search"}))
}

// gatherFloat scrapes reg and returns the value of the series of name with labels.
func gatherFloat(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}
