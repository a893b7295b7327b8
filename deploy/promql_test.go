package deploy

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	promqlString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlVariable = regexp.MustCompile(`\$\{?\w+\}?`)
	promqlToken    = regexp.MustCompile(`[A-Za-z0-9_:.]+(\s*\()?`)
	metricName     = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*$`)
	promqlKeywords = []string{"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects. It is not a PromQL
// parser: it drops strings, label matchers, ranges, grouping clauses and Grafana
// variables, then keeps the identifiers that are not functions, aggregations or
// keywords. That is enough for the expressions of our rules and dashboard, and its
// table test below pins what it understands.
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlVariable.ReplaceAllString(s, "0")
	for prev := ""; prev != s; {
		prev = s
		s = promqlMatchers.ReplaceAllString(s, " ")
		s = promqlRanges.ReplaceAllString(s, " ")
		s = promqlGrouping.ReplaceAllString(s, " ")
	}
	var out []string
	for _, m := range promqlToken.FindAllStringSubmatch(s, -1) {
		tok := strings.TrimSpace(strings.TrimSuffix(m[0], "("))
		if m[1] != "" || !metricName.MatchString(tok) || slices.Contains(promqlKeywords, strings.ToLower(tok)) {
			continue // a function or aggregation call, a number or duration, or a keyword
		}
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{name: "plain", expr: `up`, want: []string{"up"}},
		{name: "matchers and range", expr: `rate(a_total{dependency=~"$dependency",state!="x{y}"}[$__rate_interval])`, want: []string{"a_total"}},
		{name: "aggregation with clause first", expr: `sum by (dependency, le) (rate(b_bucket[5m]))`, want: []string{"b_bucket"}},
		{name: "aggregation with clause last", expr: `sum(rate(c_total[1h])) without (result)`, want: []string{"c_total"}},
		{name: "binary with matching", expr: "x > 0\nand on (job, dependency)\ny{state=\"closed\"} == 1", want: []string{"x", "y"}},
		{name: "offset and unless", expr: `f > 0 unless f offset 5m`, want: []string{"f"}},
		{name: "numbers and functions", expr: `histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m]))) * 1e3 + vector(1)`, want: []string{"h_bucket"}},
		{name: "string argument", expr: `label_replace(g, "dst", "$1", "src", "(.*)")`, want: []string{"g"}},
		{name: "colon names", expr: `job:calls:rate5m / ignoring(x) group_left (y) other`, want: []string{"job:calls:rate5m", "other"}},
		{name: "bool modifier", expr: `a == bool 1`, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, metricNames(tt.expr))
		})
	}
}
