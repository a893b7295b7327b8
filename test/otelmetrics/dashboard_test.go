package otelmetrics_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

const dashboardFile = "../../deploy/grafana/agentbreaker.json"

var labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\)\s*$`)

// dashboardQueries returns every PromQL expression of the Grafana dashboard (panel
// targets and query variables), with its variables set as Grafana would: every
// dependency, a one-minute rate interval.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	seen := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			seen[tg.Expr] = true
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			if m := labelValuesQuery.FindStringSubmatch(fmt.Sprint(q["query"])); m != nil {
				seen[m[1]] = true
			}
		}
	}
	r := strings.NewReplacer(`"$dependency"`, `".*"`, "$__rate_interval", "1m")
	var out []string
	for e := range seen {
		if e != "" {
			out = append(out, r.Replace(e))
		}
	}
	slices.Sort(out)
	require.NotEmpty(t, out)
	return out
}

// traffic runs ten minutes of an incident on both paths, scraping both registries
// every 15 s: calls succeed and fail, crm's bulkhead rejects, a model failover
// happens, on top of the parts exercise wired.
func traffic(t *testing.T, b *both) (prom, otel map[string]map[time.Duration]float64) {
	t.Helper()
	b.exercise(t)
	prom, otel = map[string]map[time.Duration]float64{}, map[string]map[time.Duration]float64{}
	scrape := func(into map[string]map[time.Duration]float64, g prometheus.Gatherer, at time.Duration) {
		for k, s := range gather(t, g, "") {
			if into[k] == nil {
				into[k] = map[time.Duration]float64{}
			}
			into[k][at] = s.value
		}
	}
	ctx := t.Context()
	for at := time.Duration(0); at <= 10*time.Minute; at += scrapeEvery {
		for _, o := range []observe.Observer{b.tel, b.otel.m} {
			o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: time.Duration(at/scrapeEvery+1) * 20 * time.Millisecond})
			o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Failed, Class: classify.ClassHTTP5xx, Elapsed: time.Second})
			o.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "mail", Tool: "send_mail", State: breaker.ForcedOpen})
			o.BulkheadRejected(ctx, "crm")
			o.RetryBudgetExhausted(ctx, "crm")
		}
		scrape(prom, b.prom, at)
		scrape(otel, b.otel.reg, at)
		b.clk.Advance(scrapeEvery)
	}
	return prom, otel
}

var (
	gotExpr   = regexp.MustCompile(`(?m)^\s+expr: "((?:[^"\\]|\\.)*)", time: \w+,\s*\n\s+exp: nil\s*\n\s+got: (.*)$`)
	scopeAttr = regexp.MustCompile(`,? ?otel_scope_\w+="[^"]*"`)
)

// evaluate runs every query under promtool at 10 minutes on the series, each
// expected to return nothing, and reads what each returned from the failure report.
func evaluate(t *testing.T, promtool, dir, name string, series map[string]map[time.Duration]float64, queries []string) map[string]string {
	t.Helper()
	var inputs []map[string]string
	for _, k := range slices.Sorted(maps.Keys(series)) {
		inputs = append(inputs, map[string]string{"series": k, "values": encode(series[k], 10*time.Minute)})
	}
	var exprs []map[string]any
	for _, q := range queries {
		exprs = append(exprs, map[string]any{"expr": q, "eval_time": "10m", "exp_samples": []any{}})
	}
	doc := map[string]any{"rule_files": []string{"empty.yml"}, "evaluation_interval": "1m",
		"tests": []map[string]any{{"interval": grid.String(), "input_series": inputs, "promql_expr_test": exprs}}}
	raw, err := yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.yml"), []byte("groups: []\n"), 0o600))
	file := filepath.Join(dir, name+".test.yml")
	require.NoError(t, os.WriteFile(file, raw, 0o600))
	out, _ := exec.CommandContext(t.Context(), promtool, "test", "rules", file).CombinedOutput()
	got := map[string]string{}
	for _, m := range gotExpr.FindAllStringSubmatch(string(out), -1) {
		expr := strings.ReplaceAll(m[1], `\"`, `"`)
		got[expr] = scopeAttr.ReplaceAllString(m[2], "")
	}
	return got
}

// TestDashboardReadsTheSameOnBothPaths evaluates every query of the Grafana dashboard
// under promtool on ten minutes of series scraped from the Prometheus telemetry and
// from OpenTelemetry's Prometheus exporter, fed the same reports: each query returns
// the same samples on both (the exporter's otel_scope_* labels aside), and every one
// returns something.
func TestDashboardReadsTheSameOnBothPaths(t *testing.T) {
	t.Parallel()
	promtool := needPromtool(t)
	queries := dashboardQueries(t)
	b := newBoth(t, 0, 0)
	prom, otel := traffic(t, b)
	dir := t.TempDir()
	fromProm := evaluate(t, promtool, dir, "prometheus", prom, queries)
	fromOTel := evaluate(t, promtool, dir, "opentelemetry", otel, queries)
	for _, q := range queries {
		require.Contains(t, fromProm, q, "the dashboard query %q returns nothing on the Prometheus path", q)
		require.Equal(t, fromProm[q], fromOTel[q], "query %q", q)
	}
	t.Logf("%d dashboard queries return the same samples on both paths; for example %s = %s", len(queries), queries[0], fromOTel[queries[0]])
}
