package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

var (
	readmeMetricRow = regexp.MustCompile("(?m)^\\| `(agentbreaker_\\w+)` \\| (\\w+) \\|([^|]*)\\|")
	readmeAlertRow  = regexp.MustCompile("(?m)^\\| `(Agentbreaker\\w+)` \\|[^|]*\\| \\+(\\w+) to \\+(\\w+) [^|]*\\|")
)

// documentedMetrics reads a markdown metric table: name to "type {labels}".
func documentedMetrics(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range readmeMetricRow.FindAllStringSubmatch(string(raw), -1) {
		labels := strings.Fields(strings.ReplaceAll(m[3], ",", " "))
		slices.Sort(labels)
		documented[m[1]] = strings.ToLower(m[2]) + " {" + strings.Join(labels, ",") + "}"
	}
	return documented
}

func exportedMetrics(t *testing.T) map[string]string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	exerciseTelemetry(t, reg)
	families, err := reg.Gather()
	require.NoError(t, err)
	exported := map[string]string{}
	for _, mf := range families {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		exported[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " {" + strings.Join(labels, ",") + "}"
	}
	return exported
}

// TestReadmeListsEveryMetric keeps the metric table of docs/operations-metrics.md
// true to the registry: every family, its type and its labels. Other pages link to it
// rather than copy it.
func TestReadmeListsEveryMetric(t *testing.T) {
	t.Parallel()
	exported := exportedMetrics(t)
	require.Equal(t, exported, documentedMetrics(t, "../docs/operations-metrics.md"))
	for _, page := range []string{"../README.md", "../docs/operations.md"} {
		require.Empty(t, documentedMetrics(t, page), "%s copies metric rows: link to docs/operations-metrics.md instead", page)
	}
}

// TestAlertTableMatchesMeasuredFireTimes keeps the "First fires" column of the alert
// tables in deploy/README.md and docs/operations.md equal to the windows
// TestAlertFireTimes measures against.
func TestAlertTableMatchesMeasuredFireTimes(t *testing.T) {
	t.Parallel()
	for _, page := range []string{"README.md", "../docs/operations.md"} {
		t.Run(page, func(t *testing.T) { requireAlertFireTimes(t, page) })
	}
}

func requireAlertFireTimes(t *testing.T, page string) {
	raw, err := os.ReadFile(page)
	require.NoError(t, err)
	type window struct{ from, by time.Duration }
	documented := map[string]window{}
	for _, m := range readmeAlertRow.FindAllStringSubmatch(string(raw), -1) {
		from, err := time.ParseDuration(m[2])
		require.NoError(t, err)
		by, err := time.ParseDuration(m[3])
		require.NoError(t, err)
		documented[m[1]] = window{from, by}
	}
	rules := loadYAML[ruleFile](t, rulesFile)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.Contains(t, documented, r.Alert, "%s: the alert table lists %s with its fire times", page, r.Alert)
		}
	}
	for _, sc := range fireScenarios {
		require.Equal(t, documented[sc.alert], window{sc.firesFrom - sc.event, sc.firesBy - sc.event},
			"%s: scenario %q: the table's fire times for %s", page, sc.name, sc.alert)
	}
}
