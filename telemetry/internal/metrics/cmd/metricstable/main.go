// Command metricstable prints the metric tables of docs/operations-metrics.md from
// the instrument table (package telemetry/internal/metrics): "prometheus" the
// families package telemetry exports, "opentelemetry" the instruments of package
// otelmetrics and their Prometheus names. The page's test (test/docs) runs it.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "prometheus" && os.Args[1] != "opentelemetry") {
		fmt.Fprintln(os.Stderr, "usage: metricstable prometheus|opentelemetry")
		os.Exit(2)
	}
	if os.Args[1] == "prometheus" {
		fmt.Println("| Metric | Type | Labels | Meaning | Appears | Series |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, r := range metrics.Rows {
			fmt.Printf("| `%s` | %s | %s | %s | %s | %s |\n", r.Prom, promType[r.Kind], strings.Join(r.Labels, ", "), r.Doc, r.Appears, series(r))
		}
		return
	}
	fmt.Println("| Instrument | Unit | Kind | Prometheus name |")
	fmt.Println("|---|---|---|---|")
	for _, r := range metrics.Rows {
		unit := "–"
		if r.Unit != "" {
			unit = "`" + r.Unit + "`"
		}
		fmt.Printf("| `%s` | %s | %s | `%s` |\n", r.Name, unit, otelKind[r.Kind], r.Prom)
	}
}

// series says what a row costs.
func series(r metrics.Row) string {
	switch {
	case r.Series == 0:
		return "len(DurationBuckets)+3 per label set"
	case r.Per != "":
		return fmt.Sprintf("%d per %s", r.Series, r.Per)
	case len(r.Labels) == 0:
		return fmt.Sprint(r.Series)
	}
	return fmt.Sprintf("%d per label set", r.Series)
}

var (
	promType = map[metrics.Kind]string{metrics.Counter: "counter", metrics.UpDown: "gauge", metrics.Histogram: "histogram",
		metrics.Gauge: "gauge", metrics.Total: "counter"}
	otelKind = map[metrics.Kind]string{metrics.Counter: "Counter", metrics.UpDown: "UpDownCounter",
		metrics.Histogram: "Histogram", metrics.Gauge: "ObservableGauge", metrics.Total: "ObservableCounter"}
)
