package otelmetrics_test

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var pageInstrumentRow = regexp.MustCompile("(?m)^\\| `(agentbreaker\\.[a-z0-9_.]+)` \\| (?:`([^`]*)`|–) \\| (\\w+) \\| `(agentbreaker_\\w+)` \\|$")

// TestMetricsPageListsBothPaths keeps the OpenTelemetry table of
// docs/operations-metrics.md true: each row's instrument is made with that unit and
// kind (read back by the SDK's manual reader), its Prometheus name is what
// OpenTelemetry's translation gives that name, unit and kind, and the exporter shows
// it; no instrument or exported family is missing from the table.
func TestMetricsPageListsBothPaths(t *testing.T) {
	t.Parallel()
	b := newBoth(t, 0, 0)
	b.exercise(t)
	var rm metricdata.ResourceMetrics
	require.NoError(t, b.otel.reader.Collect(context.Background(), &rm))
	type inst struct {
		unit, kind string
		typ        otlptranslator.MetricType
	}
	made := map[string]inst{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var in inst
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				in = inst{m.Unit, "Histogram", otlptranslator.MetricTypeHistogram}
			case metricdata.Gauge[float64]:
				in = inst{m.Unit, "ObservableGauge", otlptranslator.MetricTypeGauge}
			case metricdata.Sum[float64]:
				switch {
				case !d.IsMonotonic:
					in = inst{m.Unit, "UpDownCounter", otlptranslator.MetricTypeNonMonotonicCounter}
				default:
					in = inst{m.Unit, "Counter", otlptranslator.MetricTypeMonotonicCounter}
				}
			default:
				t.Fatalf("%s: %T", m.Name, m.Data)
			}
			made[m.Name] = in
		}
	}
	raw, err := os.ReadFile("../../docs/operations-metrics.md")
	require.NoError(t, err)
	rows := pageInstrumentRow.FindAllStringSubmatch(string(raw), -1)
	exported := families(t, b.otel.reg)
	namer := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	listed, listedProm := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		name, unit, kind, prom := r[1], r[2], r[3], r[4]
		in, ok := made[name]
		require.True(t, ok, "the page lists %s, which the adapter does not make", name)
		require.Equal(t, in.unit, unit, "%s: unit", name)
		// Observable and synchronous counters look alike once collected: the page
		// says which the adapter uses; both translate the same.
		switch kind {
		case "ObservableCounter":
			require.Equal(t, "Counter", in.kind, name)
		default:
			require.Equal(t, in.kind, kind, "%s: kind", name)
		}
		got, err := namer.Build(otlptranslator.Metric{Name: name, Unit: unit, Type: in.typ})
		require.NoError(t, err)
		require.Equal(t, prom, got, "%s translates to %s", name, got)
		require.Contains(t, exported, prom, "the exporter shows %s", prom)
		listed[name], listedProm[prom] = true, true
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(made)), slices.Collect(maps.Keys(listed)), "every instrument has a row")
	require.ElementsMatch(t, slices.Collect(maps.Keys(exported)), slices.Collect(maps.Keys(listedProm)), "every exported family has a row")
}
