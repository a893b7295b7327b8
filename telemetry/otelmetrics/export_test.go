package otelmetrics

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// InstrumentNames returns the name of every row of the instrument table, for the
// tests that must cover each.
func InstrumentNames() []string {
	out := make([]string, 0, len(metrics.Rows))
	for _, r := range metrics.Rows {
		out = append(out, r.Name)
	}
	return out
}
