package telemetry_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// TestFirstScrapeHoldsTheCallPathFamiliesAtZero is the regression test for issue 48
// item 5: agentbreaker_bulkhead_rejections_total, agentbreaker_retry_budget_exhausted_total
// and agentbreaker_tool_calls_abandoned(_total) were absent until their first event,
// so a rate() or an alert on them said nothing at first. Right after wiring, before
// any call, a scrape of a real registry holds them at 0 for the watched dependency and
// its tool.
func TestFirstScrapeHoldsTheCallPathFamiliesAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup"}}},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)

	want := `
# HELP agentbreaker_bulkhead_rejections_total Calls refused because the dependency's bulkhead was full.
# TYPE agentbreaker_bulkhead_rejections_total counter
agentbreaker_bulkhead_rejections_total{dependency="crm"} 0
# HELP agentbreaker_retry_budget_exhausted_total Retries refused because the dependency's retry budget was spent.
# TYPE agentbreaker_retry_budget_exhausted_total counter
agentbreaker_retry_budget_exhausted_total{dependency="crm"} 0
# HELP agentbreaker_tool_calls_abandoned Tool calls that ran past their timeout and are still running: the wrapper answered without them and their goroutine is stuck until the tool returns.
# TYPE agentbreaker_tool_calls_abandoned gauge
agentbreaker_tool_calls_abandoned{tool="crm_lookup"} 0
# HELP agentbreaker_tool_calls_abandoned_total Tool calls abandoned after their timeout because the tool ignored its context.
# TYPE agentbreaker_tool_calls_abandoned_total counter
agentbreaker_tool_calls_abandoned_total{tool="crm_lookup"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"agentbreaker_bulkhead_rejections_total", "agentbreaker_retry_budget_exhausted_total",
		"agentbreaker_tool_calls_abandoned", "agentbreaker_tool_calls_abandoned_total"))
}
