package otelmetrics_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

// TestFirstCollectionHoldsTheCallPathInstrumentsAtZero is package telemetry's
// TestFirstScrapeHoldsTheCallPathFamiliesAtZero on this path (issue 48 item 5).
func TestFirstCollectionHoldsTheCallPathInstrumentsAtZero(t *testing.T) {
	t.Parallel()
	m, reader := newMetrics(t, otelmetrics.Config{})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup"}}},
		OnStateChange: []func(breaker.Event){m.BreakerEvent},
	})
	m.Watch(deps)
	c := collect(t, reader)
	for name, labels := range map[string]string{
		"agentbreaker.bulkhead.rejections":    "dependency=crm",
		"agentbreaker.retry_budget.exhausted": "dependency=crm",
		"agentbreaker.tool_calls.abandoned":   "tool=crm_lookup",
		"agentbreaker.tool.calls.abandoned":   "tool=crm_lookup",
	} {
		require.Equal(t, map[string]float64{labels: 0}, c.points(t, name), name)
	}
}
