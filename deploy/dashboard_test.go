package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\)\s*$`)

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("grafana/agentbreaker.json")
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d), "the dashboard is valid JSON of the expected shape")
	return d
}

// queries returns every PromQL expression of the dashboard, named by where it is.
func (d dashboard) queries() map[string]string {
	out := make(map[string]string)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		query, _ := q["query"].(string)
		// label_values(metric, label) is Grafana's, not PromQL: its first argument is
		// the selector.
		if m := labelValues.FindStringSubmatch(query); m != nil {
			query = m[1]
		}
		out[fmt.Sprintf("variable %q", v.Name)] = query
	}
	return out
}

func TestDashboardStructure(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	require.Positive(t, d.SchemaVersion)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, map[string]string{"datasource": "datasource", "dependency": "query"}, vars)

	ids := map[int]bool{}
	queryPanels := 0
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Title, "panel %d has a title", p.ID)
		require.False(t, ids[p.ID], "panel id %d is unique", p.ID)
		ids[p.ID] = true
		g := p.GridPos
		require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24 && g.Y >= 0, "panel %q gridPos %+v fits the 24-column grid", p.Title, g)
		switch p.Type {
		case "row", "alertlist":
			require.Empty(t, p.Targets, "panel %q queries nothing", p.Title)
			continue
		}
		queryPanels++
		require.NotNil(t, p.Datasource, "panel %q names its data source", p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q uses the data source variable", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has queries", p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q target %s has an expression", p.Title, tg.RefID)
			require.False(t, refs[tg.RefID], "panel %q refId %s is unique", p.Title, tg.RefID)
			refs[tg.RefID] = true
		}
	}
	require.GreaterOrEqual(t, queryPanels, 10)
}

// TestDashboardQueriesUseExportedMetrics reads the dashboard against the scrape of one
// Wire call over every feature (wiredScrape): each query selects only families that
// scrape has, each label it matches on or groups by is on the family it selects, and
// every family has a panel.
func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	families := wiredScrape(t)
	labels := seriesLabels(families)
	used := map[string]bool{}
	for where, expr := range loadDashboard(t).queries() {
		names := metricNames(expr)
		require.NotEmpty(t, names, "%s selects a metric: %s", where, expr)
		for _, n := range names {
			_, ok := labels[n]
			require.True(t, ok, "%s uses %q, which one Wire call over every feature does not export: %s", where, n, expr)
			used[n] = true
		}
		require.Empty(t, missingLabels(expr, labels), "%s selects labels the scrape lacks: %s", where, expr)
	}
	// The dashboard covers every signal the library exports.
	for _, mf := range families {
		name := mf.GetName()
		shown := used[name]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			shown = shown || used[name+suffix]
		}
		require.True(t, shown, "no dashboard panel shows %s", name)
	}
}
