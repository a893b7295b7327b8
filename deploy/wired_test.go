package deploy

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// wiredScrape configures every feature an operator can (a dependency map with a
// throttle and an adaptive limit, a model failover over two routes, a fleet source, a
// journal on SQLite, a retrier and a tooltimeout-wrapped tool), hands them to the
// telemetry in one Wire call and nothing else, drives a few events through the real
// parts, and returns the scrape. The fleet is stubFleet, as a real one needs Redis
// (test/otelmetrics wires one when Redis answers). It fails unless the scrape shows every family the telemetry
// package declares: a family that needs a per-feature call besides Wire fails here.
func wiredScrape(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	ctx := t.Context()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: clk})

	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}},
			"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{},
				Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 2, MinSamples: 1, UpdateInterval: time.Second}},
		},
		ModelDefault: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		Clock:        clk,
	})
	primaryDown := true
	failover := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "pro", Region: "a", LLM: scriptedLLM{name: "pro", fail: &primaryDown}},
			{Model: "pro", Region: "b", LLM: scriptedLLM{name: "pro", fail: new(bool)}},
		},
		Breakers: deps, Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	j, err := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "journal.db")}, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	retrier := retry.MustNew(retry.Config{Clock: clk,
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: clk, MinRetriesPerSecond: -1})})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	export := tooltimeout.MustWrap(stuckTool{release}, tooltimeout.Config{Timeout: time.Millisecond})

	// The one call.
	tel.Wire(telemetry.Parts{Dependencies: deps, Failover: failover, Fleet: stubFleet{},
		Journal: j, Retrier: retrier, Tools: []tool.Tool{export}})

	// The breaker of crm trips, and a user call's probe closes it again.
	crm, ok := deps.Get("crm")
	require.True(t, ok)
	p, err := crm.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, breaker.Open, crm.State())
	clk.Advance(crm.RetryAfter() + time.Second)
	p, err = crm.Allow()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, breaker.Closed, crm.State())

	// Two model turns: the primary fails, its breaker opens, the fallback serves.
	for range 2 {
		for _, err := range failover.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("hi")}, false) {
			require.NoError(t, err)
		}
	}
	// A retry the budget refuses.
	res := retrier.Do(ctx, retry.Operation{Dependency: "crm", Tool: "lookup_customer"},
		func(context.Context, retry.Info) (classify.Classification, error) {
			return classify.ForClass(classify.ClassConnectionRefused), errors.New("connection refused")
		})
	require.Equal(t, retry.ReasonBudgetExhausted, res.Reason)
	// A tool call the wrapper abandons.
	_, err = export.Run(&toolCtx{ctx: ctx}, map[string]any{})
	require.IsType(t, &tooltimeout.TimeoutError{}, err)

	// What the callbacks report, given tel as their Observer.
	tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Elapsed: time.Millisecond})
	tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
	tel.BulkheadRejected(ctx, "crm")
	tel.WouldRefuse(ctx, "crm", "breaker")

	families, err := reg.Gather()
	require.NoError(t, err)
	names := make([]string, 0, len(families))
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	require.Equal(t, declaredFamilies(t), names,
		"one Wire call over every feature exports every family the telemetry package declares")
	return families
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// seriesLabels returns, for every name a query can select in families (a histogram h
// as h_bucket, h_sum and h_count), the labels its series carry in the scrape, with the
// target labels Prometheus adds.
func seriesLabels(families []*dto.MetricFamily) map[string][]string {
	out := make(map[string][]string)
	add := func(name string, labels map[string]bool, extra ...string) {
		set := maps.Clone(labels)
		for _, l := range append(extra, targetLabels...) {
			set[l] = true
		}
		out[name] = slices.Sorted(maps.Keys(set))
	}
	for _, mf := range families {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		name := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			add(name+"_bucket", labels, "le")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		case dto.MetricType_SUMMARY:
			add(name, labels, "quantile")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	return out
}

// scriptedLLM answers, or fails with a 503 while fail is set.
type scriptedLLM struct {
	name string
	fail *bool
}

func (l scriptedLLM) Name() string { return l.name }
func (l scriptedLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if *l.fail {
			yield(nil, genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "overloaded"})
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText("ok", genai.RoleModel)}, nil)
	}
}

// stuckTool is a tool that ignores its context until released.
type stuckTool struct{ release chan struct{} }

func (stuckTool) Name() string        { return "export_report" }
func (stuckTool) Description() string { return "exports a report" }
func (stuckTool) IsLongRunning() bool { return false }
func (s stuckTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: s.Name(), Description: s.Description()}
}
func (s stuckTool) Run(agent.Context, any) (map[string]any, error) {
	<-s.release
	return map[string]any{"late": true}, nil
}

// toolCtx is the agent.Context a tool receives, reduced to its context.Context part
// and the call's IDs.
type toolCtx struct {
	agent.Context
	ctx context.Context
}

func (c *toolCtx) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *toolCtx) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *toolCtx) Err() error                  { return c.ctx.Err() }
func (c *toolCtx) Value(k any) any             { return c.ctx.Value(k) }
func (c *toolCtx) InvocationID() string        { return "e-42" }
func (c *toolCtx) FunctionCallID() string      { return "call-7" }
