package deploy

import (
	"fmt"
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

var (
	promqlSelector = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{([^{}]*)\}`)
	promqlMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promqlByClause = regexp.MustCompile(`\b(?:by|without)\s*\(([^()]*)\)`)
)

// labelUse is a label a query needs on the series it selects: a matcher's label on its
// selector's metric, or a by or without clause's label on every metric its aggregation
// reads.
type labelUse struct {
	Label  string
	Series []string
}

// labelUses returns the labels expr uses in selectors and in by and without clauses,
// each with the metric names it must be on. Like metricNames it is not a PromQL
// parser; its table test below pins what it understands. A selector with no metric
// name ({job="x"}) selects no family and is left out.
func labelUses(expr string) []labelUse {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlVariable.ReplaceAllString(s, "0")
	var out []labelUse
	for _, m := range promqlSelector.FindAllStringSubmatch(s, -1) {
		if m[1] == "" || slices.Contains(promqlKeywords, strings.ToLower(m[1])) {
			continue
		}
		for _, lm := range promqlMatcher.FindAllStringSubmatch(m[2], -1) {
			if lm[1] != "__name__" {
				out = append(out, labelUse{Label: lm[1], Series: []string{m[1]}})
			}
		}
	}
	for _, loc := range promqlByClause.FindAllStringSubmatchIndex(s, -1) {
		arg := aggregationArgument(s, loc[0], loc[1])
		series := metricNames(arg)
		for l := range strings.SplitSeq(s[loc[2]:loc[3]], ",") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, labelUse{Label: l, Series: series})
			}
		}
	}
	return out
}

// aggregationArgument returns the parenthesised argument of the aggregation whose
// by or without clause is s[from:to]: the group that follows the clause (sum by (x)
// (...)) or, when none does, the one that ends just before it (sum (...) by (x)).
func aggregationArgument(s string, from, to int) string {
	rest := strings.TrimLeft(s[to:], " \t\n")
	if strings.HasPrefix(rest, "(") {
		depth := 0
		for i, r := range rest {
			switch r {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return rest[:i+1]
				}
			}
		}
		return rest
	}
	before := strings.TrimRight(s[:from], " \t\n")
	depth := 0
	for i := len(before) - 1; i >= 0; i-- {
		switch before[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				return before[i:]
			}
		}
	}
	return ""
}

// missingLabels returns, for every label expr uses that a metric it selects lacks in
// labels (series name to its label names, as seriesLabels gives), one line saying so.
// A metric absent from labels is metricNames' concern, not this one's.
func missingLabels(expr string, labels map[string][]string) []string {
	var out []string
	for _, u := range labelUses(expr) {
		for _, series := range u.Series {
			if have, ok := labels[series]; ok && !slices.Contains(have, u.Label) {
				out = append(out, fmt.Sprintf("%s has no label %q (it has %s)", series, u.Label, strings.Join(have, ", ")))
			}
		}
	}
	return out
}

func TestMissingLabels(t *testing.T) {
	t.Parallel()
	labels := map[string][]string{
		"a_total":  {"dependency", "instance", "job", "outcome"},
		"h_bucket": {"dependency", "instance", "job", "le"},
		"g":        {"instance", "job"},
	}
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{name: "all present", expr: `sum by (dependency, outcome) (rate(a_total{dependency=~"$dependency",outcome!="SUCCEEDED"}[$__rate_interval]))`},
		{name: "le on a bucket", expr: `histogram_quantile(0.95, sum by (le, dependency) (rate(h_bucket[5m])))`},
		{name: "target labels", expr: `sum by (instance) (g)`},
		{name: "unknown metric is not this check's", expr: `other{nope="x"}`},
		{name: "selector label missing", expr: `rate(a_total{tool="x"}[5m])`,
			want: []string{`a_total has no label "tool" (it has dependency, instance, job, outcome)`}},
		{name: "by label missing", expr: `sum by (dependency, cause) (rate(a_total[5m]))`,
			want: []string{`a_total has no label "cause" (it has dependency, instance, job, outcome)`}},
		{name: "trailing without label missing", expr: `sum(rate(a_total[5m])) without (state)`,
			want: []string{`a_total has no label "state" (it has dependency, instance, job, outcome)`}},
		{name: "by label missing on one side", expr: `sum by (dependency) (a_total / g)`,
			want: []string{`g has no label "dependency" (it has instance, job)`}},
		{name: "le off a bucket", expr: `sum by (le) (a_total)`,
			want: []string{`a_total has no label "le" (it has dependency, instance, job, outcome)`}},
		{name: "a string is not a matcher", expr: `g{job="a{tool=\"x\"}"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, missingLabels(tt.expr, labels))
		})
	}
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
