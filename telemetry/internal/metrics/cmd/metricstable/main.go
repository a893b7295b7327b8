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
		fmt.Println("| Metric | Type | Labels | Meaning | Appears |")
		fmt.Println("|---|---|---|---|---|")
		for _, r := range metrics.Rows {
			fmt.Printf("| `%s` | %s | %s | %s | %s |\n", r.Prom, promType[r.Kind], strings.Join(r.Labels, ", "), r.Doc, r.Appears)
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

var (
	promType = map[metrics.Kind]string{metrics.Counter: "counter", metrics.UpDown: "gauge", metrics.Histogram: "histogram",
		metrics.Gauge: "gauge", metrics.Total: "counter"}
	otelKind = map[metrics.Kind]string{metrics.Counter: "Counter", metrics.UpDown: "UpDownCounter",
		metrics.Histogram: "Histogram", metrics.Gauge: "ObservableGauge", metrics.Total: "ObservableCounter"}
)
