package otelmetrics_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

var epoch = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// otelPath is an adapter on the SDK, exported by OpenTelemetry's Prometheus exporter to
// a registry of its own: what a Prometheus server scraping an OpenTelemetry-instrumented
// process reads.
type otelPath struct {
	m      *otelmetrics.Metrics
	reg    *prometheus.Registry
	reader *sdkmetric.ManualReader // the same instruments, read by the SDK's manual reader
}

func newOTelPath(t testing.TB, cfg otelmetrics.Config) otelPath {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	cfg.MeterProvider = mp
	m, err := otelmetrics.New(cfg)
	require.NoError(t, err)
	return otelPath{m: m, reg: reg, reader: reader}
}

// sample is one series of a gathered family, as a Prometheus server stores it: a
// histogram is expanded into its _bucket, _sum and _count series.
type sample struct {
	name   string
	labels map[string]string
	value  float64
	typ    dto.MetricType
}

func (s sample) key() string {
	keys := slices.Sorted(maps.Keys(s.labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, s.labels[k]))
	}
	return s.name + "{" + strings.Join(parts, ",") + "}"
}

// gather returns every series of g by key. Labels starting with skipPrefix (the
// exporter's otel_scope_* labels) are dropped when skipPrefix is set.
func gather(t *testing.T, g prometheus.Gatherer, skipPrefix string) map[string]sample {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	out := map[string]sample{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				if skipPrefix != "" && strings.HasPrefix(l.GetName(), skipPrefix) {
					continue
				}
				labels[l.GetName()] = l.GetValue()
			}
			add := func(name string, v float64, extra ...string) {
				ls := maps.Clone(labels)
				for i := 0; i+1 < len(extra); i += 2 {
					ls[extra[i]] = extra[i+1]
				}
				s := sample{name: name, labels: ls, value: v, typ: mf.GetType()}
				_, dup := out[s.key()]
				require.False(t, dup, "series %s twice", s.key())
				out[s.key()] = s
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(mf.GetName(), m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(mf.GetName(), m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(mf.GetName()+"_bucket", float64(b.GetCumulativeCount()), "le", fmt.Sprint(b.GetUpperBound()))
				}
				add(mf.GetName()+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				add(mf.GetName()+"_sum", h.GetSampleSum())
				add(mf.GetName()+"_count", float64(h.GetSampleCount()))
			default:
				t.Fatalf("%s: unexpected type %s", mf.GetName(), mf.GetType())
			}
		}
	}
	return out
}

// families returns the family names and types of a gathering.
func families(t *testing.T, g prometheus.Gatherer) map[string]dto.MetricType {
	t.Helper()
	fs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]dto.MetricType{}
	for _, mf := range fs {
		out[mf.GetName()] = mf.GetType()
	}
	return out
}

var metricNameLit = regexp.MustCompile(`^"(agentbreaker_[a-z0-9_]+)"$`)

// declaredFamilies returns every metric name the telemetry package's source (its
// tests aside) writes as a string literal: the names the Prometheus path can export.
func declaredFamilies(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("../../telemetry/*.go")
	require.NoError(t, err)
	table, err := filepath.Glob("../../telemetry/internal/metrics/*.go")
	paths = append(paths, table...)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if m := metricNameLit.FindStringSubmatch(lit.Value); m != nil {
					seen[m[1]] = true
				}
			}
			return true
		})
	}
	require.NotEmpty(t, seen)
	out := slices.Collect(maps.Keys(seen))
	sort.Strings(out)
	return out
}

// both is the two paths fed the same reports: a Prometheus Telemetry and an adapter
// behind the exporter, on one clock.
type both struct {
	tel  *telemetry.Telemetry
	prom *prometheus.Registry
	otel otelPath
	clk  *clock.Fake
}

func newBoth(t *testing.T, maxSeries, maxLabels int) *both {
	t.Helper()
	clk := clock.NewFake(epoch)
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: clk, MaxSeries: maxSeries, MaxLabelValues: maxLabels})
	return &both{tel: tel, prom: reg, clk: clk,
		otel: newOTelPath(t, otelmetrics.Config{Clock: clk, MaxSeries: maxSeries, MaxLabelValues: maxLabels})}
}

func (b *both) listeners() []func(breaker.Event) {
	return []func(breaker.Event){b.tel.BreakerEvent, b.otel.m.BreakerEvent}
}

// stubFleet stands for a *fleet.Fleet, read through FleetSource on both paths.
type stubFleet struct{}

func (stubFleet) Scope(string) string { return "local" }
func (stubFleet) Counters() (syncs, failures, outages, commands int64) {
	return 10, 2, 1, 12
}
func (stubFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { yield("timeout", 2) }
}

// collectReader reads every instrument by name: its values by attribute set
// ("k=v,k=v", keys sorted); a histogram's value is its count.
func collectReader(t *testing.T, r *sdkmetric.ManualReader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]map[string]float64{}
	key := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			parts = append(parts, string(kv.Key)+"="+kv.Value.String())
		}
		return strings.Join(parts, ",")
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			pts := map[string]float64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = p.Value
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = float64(p.Count)
				}
			}
			out[m.Name] = pts
		}
	}
	return out
}
