package otelmetrics_test

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// scrapeHTTP serves g as /metrics over HTTP, reads it as a Prometheus server does and
// parses it.
func scrapeHTTP(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "the scrape failed: %s", raw)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	require.NoError(t, err)
	return fams
}

// labelValues returns the sorted distinct values of label in family name.
func labelValues(t *testing.T, fams map[string]*dto.MetricFamily, name, label string) []string {
	t.Helper()
	mf, ok := fams[name]
	require.True(t, ok, "the scrape has no %s", name)
	seen := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				seen[l.GetValue()] = true
			}
		}
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// TestLibraryClassesAreOutsideTheLabelCap is issue 43's fifth finding: with
// MaxLabelValues 5, agentbreaker_calls_total held 7 error_class values besides
// "other" (5 invented, and http_5xx and none), where the docs said the cap applied to
// error_class. The rule now written in telemetry.Config.MaxLabelValues: the library's
// own classes are outside the cap (a bounded set, charged to MaxSeries), the cap holds
// the names a classifier invents; and it holds for every label that carries a class,
// cause as well, where a failover's http_5xx used to be folded into "other" once a
// classifier had invented five causes (this part fails on the old code). Both paths,
// scraped over HTTP.
func TestLibraryClassesAreOutsideTheLabelCap(t *testing.T) {
	t.Parallel()
	const limit = 5
	b := newBoth(t, 0, limit)
	ctx := context.Background()
	var invented []string
	for i := range limit + 3 {
		invented = append(invented, fmt.Sprintf("invented_%d", i))
	}
	for _, o := range []observe.Observer{b.tel, b.otel.m} {
		for _, c := range invented {
			o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup", Outcome: classify.Failed, Class: classify.Class(c)})
			o.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: c})
		}
		// The library's classes and causes, after the cap is spent.
		o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup", Outcome: classify.Unknown, Class: classify.ClassHTTP5xx})
		o.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup", Outcome: classify.Succeeded})
		o.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: string(classify.ClassHTTP5xx)})
		o.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: string(modelfailover.CauseAllRoutesOpen)})
	}
	capped := append(slices.Clone(invented[:limit]), "other")
	wantClasses := slices.Sorted(slices.Values(append(slices.Clone(capped), "http_5xx", "none")))
	wantCauses := slices.Sorted(slices.Values(append(slices.Clone(capped), "http_5xx", "all_routes_open")))
	for name, g := range map[string]prometheus.Gatherer{"prometheus": b.prom, "opentelemetry": b.otel.reg} {
		t.Run(name, func(t *testing.T) {
			fams := scrapeHTTP(t, g)
			require.Equal(t, wantClasses, labelValues(t, fams, "agentbreaker_calls_total", "error_class"),
				"error_class: the first %d invented classes, the rest as other, and the library's classes as themselves", limit)
			require.Equal(t, wantCauses, labelValues(t, fams, "agentbreaker_model_failovers_total", "cause"),
				"cause: the first %d invented causes, the rest as other, and the library's causes as themselves", limit)
		})
	}
}

// TestBidiCharactersNeverReachALabel is issue 43's sixth finding: bidirectional-text
// characters (U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE) reached
// metric label values unchanged, while the dependency map refuses them in dependency
// keys (redact.CheckName). A label now treats them as a key does its control
// characters: they become U+FFFD, on both paths, scraped over HTTP.
func TestBidiCharactersNeverReachALabel(t *testing.T) {
	t.Parallel()
	b := newBoth(t, 0, 0)
	ctx := context.Background()
	hostile := map[string]string{
		"tool":        "lookup\u202e_customer",
		"dependency":  "crm\u2066",
		"error_class": "refused\u2067\u200b_here",
		"route":       "pro\u202d@a",
	}
	for _, o := range []observe.Observer{b.tel, b.otel.m} {
		o.CallOutcome(ctx, observe.Call{Dependency: hostile["dependency"], Tool: hostile["tool"], Outcome: classify.Failed,
			Class: classify.Class(hostile["error_class"])})
		o.Failover(ctx, observe.Failover{From: hostile["route"], To: "pro@b", Cause: hostile["error_class"]})
	}
	// A fleet source's sync-error classes are labels too; two that clean to the same
	// label are one series.
	b.tel.WatchFleet(hostileFleet{})
	b.otel.m.WatchFleet(hostileFleet{})
	for name, g := range map[string]prometheus.Gatherer{"prometheus": b.prom, "opentelemetry": b.otel.reg} {
		t.Run(name, func(t *testing.T) {
			fams := scrapeHTTP(t, g)
			var values []string
			for _, mf := range fams {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						values = append(values, l.GetValue())
						for _, r := range l.GetValue() {
							require.False(t, unicode.Is(unicode.Cf, r) || unicode.IsControl(r),
								"%s{%s=%+q} holds %U", mf.GetName(), l.GetName(), l.GetValue(), r)
						}
					}
				}
			}
			require.Contains(t, labelValues(t, fams, "agentbreaker_calls_total", "tool"), "lookup\uFFFD_customer")
			require.Contains(t, labelValues(t, fams, "agentbreaker_calls_total", "dependency"), "crm\uFFFD")
			require.Contains(t, labelValues(t, fams, "agentbreaker_calls_total", "error_class"), "refused\uFFFD\uFFFD_here")
			require.Contains(t, labelValues(t, fams, "agentbreaker_model_failovers_total", "from"), "pro\uFFFD@a")
			require.Equal(t, []string{"redis\uFFFDdown"}, labelValues(t, fams, "agentbreaker_fleet_sync_errors_total", "error"))
			require.NotEmpty(t, values)
		})
	}
}

// hostileFleet is a fleet source whose sync-error classes hold bidirectional
// characters (two that differ only in which one).
type hostileFleet struct{}

func (hostileFleet) Scope(string) string { return "local" }
func (hostileFleet) Counters() (syncs, failures, outages, commands int64) {
	return 3, 2, 0, 3
}
func (hostileFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		_ = yield("redis\u202edown", 1) && yield("redis\u2066down", 1)
	}
}
