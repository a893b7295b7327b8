package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

var readmeMetricRow = regexp.MustCompile("(?m)^\\| `(agentbreaker_\\w+)` \\| (\\w+) \\|([^|]*)\\|")

// TestReadmeListsEveryMetric keeps the metric table of README.md (the Operations text)
// true to the registry: every family, its type and its labels.
func TestReadmeListsEveryMetric(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range readmeMetricRow.FindAllStringSubmatch(string(raw), -1) {
		labels := strings.Fields(strings.ReplaceAll(m[3], ",", " "))
		slices.Sort(labels)
		documented[m[1]] = strings.ToLower(m[2]) + " {" + strings.Join(labels, ",") + "}"
	}

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
	require.Equal(t, exported, documented)
}
