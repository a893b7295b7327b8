package deploy

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// exportedFamilies registers a real Telemetry, reports one of everything, and returns
// the metric family names a scrape shows, with their types. It fails unless the
// families shown are exactly the metric names the telemetry package declares in its
// source (declaredFamilies): a family registered only on some path (the
// ModelObserver's agentbreaker_model_fallback_calls_total, which counting the
// Telemetry's own Describe missed) must be exercised here, or this fails.
func exportedFamilies(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	exerciseTelemetry(t, reg)
	families, err := reg.Gather()
	require.NoError(t, err)
	out := make(map[string]dto.MetricType, len(families))
	for _, mf := range families {
		out[mf.GetName()] = mf.GetType()
	}
	require.Equal(t, declaredFamilies(t), slices.Sorted(maps.Keys(out)),
		"every metric name the telemetry package declares must be exercised in exerciseTelemetry")
	return out
}

// metricNameLit is a metric family name as a Go string literal holds it.
var metricNameLit = regexp.MustCompile(`^"(agentbreaker_[a-z0-9_]+)"$`)

// declaredFamilies returns every metric name written as a string literal in the
// telemetry package's source (its tests aside), sorted: the names it can export,
// whichever path registers them.
func declaredFamilies(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("../telemetry/*.go")
	require.NoError(t, err)
	table, err := filepath.Glob("../telemetry/internal/metrics/*.go")
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
	return slices.Sorted(maps.Keys(seen))
}

// TestDeclaredFamiliesSeesTheModelObserver is the regression test for the metric
// table missing agentbreaker_model_fallback_calls_total: the family is registered
// only when the ModelObserver is, so the old check (the Telemetry's own Describe)
// never counted it.
func TestDeclaredFamiliesSeesTheModelObserver(t *testing.T) {
	t.Parallel()
	require.Contains(t, declaredFamilies(t), "agentbreaker_model_fallback_calls_total")
	require.Contains(t, exportedFamilies(t), "agentbreaker_model_fallback_calls_total")
	require.Contains(t, documentedMetrics(t, "../docs/operations-metrics.md"), "agentbreaker_model_fallback_calls_total")
}

// exerciseTelemetry registers a Telemetry on reg and reports one of everything.
func exerciseTelemetry(t *testing.T, reg prometheus.Registerer) *telemetry.Telemetry {
	t.Helper()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm":    {Tools: []string{"lookup_customer"}},
			"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{}, Adaptive: &adaptivelimit.Config{}},
		},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)
	tel.WatchThrottles(deps)
	tel.WatchLimits(deps)
	ctx := context.Background()
	tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
	tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
	tel.BulkheadRejected(ctx, "crm")
	tel.RetryBudgetExhausted(ctx, "crm")
	tel.WouldRefuse(ctx, "crm", "breaker")
	tel.Failover(ctx, observe.Failover{From: "pro@a", To: "pro@b", Cause: "http_5xx"})
	tel.RouteServing("pro", "b")
	tel.FallbackShare(0.1)
	tel.JournalPending(1, time.Now())
	tel.ToolAbandoned(ctx, tooltimeout.Abandon{Tool: "export_report", Limit: time.Second, Running: 1})
	tel.WatchFleet(stubFleet{})
	// A breaker that trips and is closed by a user call's probe: the probe results.
	clk := clock.NewFake(time.Unix(0, 0))
	b := breaker.MustNew(breaker.Config{Name: "billing", Clock: clk, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent}})
	if p, err := b.Allow(); err == nil {
		p.Failure()
	}
	clk.Advance(time.Minute)
	if p, err := b.Allow(); err == nil {
		p.Success()
	}
	// The model failover adapter registers a collector of its own.
	obs := tel.ModelObserver()
	obs.ObserveCall(ctx, modelfailover.Call{ServedBy: modelfailover.ServedFallback,
		Route:        modelfailover.Endpoint{Name: "pro@b", Model: "pro", Region: "b"},
		FallbackFrom: modelfailover.Endpoint{Name: "pro@a", Model: "pro", Region: "a", Primary: true}, FallbackCause: "http_5xx"})
	return tel
}

// stubFleet stands for a *fleet.Fleet (its metrics are read through
// telemetry.FleetSource), so this package's tests need no Redis; test/admin scrapes a
// real one.
type stubFleet struct{}

func (stubFleet) Scope(string) string { return "local" }
func (stubFleet) Counters() (syncs, failures, outages, commands int64) {
	return 10, 2, 1, 12
}
func (stubFleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { yield("timeout", 2) }
}

// seriesNames expands families into the names a query can select: a histogram family
// h is queried as h_bucket, h_sum and h_count.
func seriesNames(families map[string]dto.MetricType) map[string]string {
	out := make(map[string]string)
	for name, typ := range families {
		switch typ {
		case dto.MetricType_HISTOGRAM:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = name
			}
		case dto.MetricType_SUMMARY:
			out[name] = name
			for _, suffix := range []string{"_sum", "_count"} {
				out[name+suffix] = name
			}
		default:
			out[name] = name
		}
	}
	return out
}
