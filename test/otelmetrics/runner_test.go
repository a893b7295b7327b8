package otelmetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

var (
	spansOnce sync.Once
	spans     *tracetest.SpanRecorder
)

// globalSpans records every span of the test binary: adk-go starts its spans on the
// global tracer provider.
func globalSpans() *tracetest.SpanRecorder {
	spansOnce.Do(func() {
		spans = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	})
	return spans
}

func attrs(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// TestRunnerIncidentThroughOTel runs the callbacks plugin in adk-go's real runner with
// an otelmetrics.Metrics as its Observer, against an HTTP tool whose server counts the
// requests it got: the calls, the trip, the short-circuits and the probe that closes
// the breaker reach the instruments (read by the SDK's manual reader), and the trip,
// the move to half-open and the close land as "agentbreaker.transition" events on the
// execute_tool spans of the calls that caused them.
func TestRunnerIncidentThroughOTel(t *testing.T) {
	rec := globalSpans()
	clk := clock.NewFake(epoch)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	om := otelmetrics.MustNew(otelmetrics.Config{MeterProvider: mp, Clock: clk})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, PolicyVersion: "v7",
		Dependencies: map[string]dependencymap.Dependency{
			"billing": {Tools: []string{"get_invoice"}, Policy: breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){om.BreakerEvent}})
	om.Watch(deps)
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, Observability: callbacks.Observability{Observer: om}})
	server := breakertest.NewServer(t)
	invoice, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "get_invoice", URL: server.URL,
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	require.NoError(t, err)
	n := 0
	llm := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		n++
		return breakertest.Calls(&genai.FunctionCall{ID: fmt.Sprintf("otel-%d", n), Name: "get_invoice", Args: map[string]any{"query": "INV-7"}})
	}})
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Tools: []tool.Tool{invoice}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	turn := func() {
		_, err := h.Run(context.Background(), sid, "Is invoice INV-7 paid?")
		require.NoError(t, err)
	}

	server.Enqueue(breakertest.OK("paid"), breakertest.OK("paid"))
	server.Set(breakertest.Status(http.StatusServiceUnavailable))
	for range 4 {
		turn()
	}
	b, _ := deps.Get("billing")
	require.Equal(t, breaker.Open, b.State())
	turn() // short-circuited
	require.Equal(t, int64(4), server.Requests(), "the open breaker kept call 5 from the server")
	server.Set(breakertest.OK("paid"))
	clk.Advance(31 * time.Second)
	turn() // the probe
	require.Equal(t, int64(5), server.Requests())
	require.Equal(t, breaker.Closed, b.State())

	c := collectReader(t, reader)
	require.Equal(t, map[string]float64{
		"dependency=billing,error_class=none,outcome=SUCCEEDED,tool=get_invoice":  3,
		"dependency=billing,error_class=http_5xx,outcome=FAILED,tool=get_invoice": 2,
	}, c["agentbreaker.calls"])
	require.Equal(t, map[string]float64{"dependency=billing,state=open,tool=get_invoice": 1}, c["agentbreaker.short_circuits"])
	tr := c["agentbreaker.breaker.transitions"]
	require.Equal(t, 1.0, tr["cause=failure_rate,dependency=billing,from=closed,to=open"])
	require.Equal(t, 1.0, tr["cause=probe_succeeded,dependency=billing,from=half_open,to=closed"])
	require.Equal(t, 1.0, c["agentbreaker.breaker.state"]["dependency=billing,state=closed"])

	// The spans of calls 4 (the trip) and 6 (the probe).
	found := map[string][]sdktrace.Event{}
	for _, s := range rec.Ended() {
		if id, ok := attrs(s.Attributes())["gen_ai.tool.call.id"].(string); ok && s.Name() == "execute_tool get_invoice" {
			found[id] = s.Events()
		}
	}
	trip := found["otel-4"]
	require.Len(t, trip, 2)
	require.Equal(t, "agentbreaker.transition", trip[0].Name)
	require.Subset(t, attrs(trip[0].Attributes), map[string]any{
		"agentbreaker.dependency": "billing", "agentbreaker.from": "closed", "agentbreaker.to": "open",
		"agentbreaker.cause": "failure_rate", "agentbreaker.policy_version": "v7", "agentbreaker.window_failed_calls": int64(2),
	})
	require.Equal(t, "agentbreaker.attempt", trip[1].Name)
	require.Equal(t, "agentbreaker.short_circuit", found["otel-5"][0].Name)
	// The probe's admission moved the breaker to half-open, its success closed it.
	probe := found["otel-6"]
	require.Len(t, probe, 3)
	require.Subset(t, attrs(probe[0].Attributes), map[string]any{"agentbreaker.from": "open", "agentbreaker.to": "half_open", "agentbreaker.cause": "cooldown_elapsed"})
	require.Subset(t, attrs(probe[1].Attributes), map[string]any{"agentbreaker.from": "half_open", "agentbreaker.to": "closed", "agentbreaker.cause": "probe_succeeded"})
	require.Equal(t, "agentbreaker.probe", probe[2].Name)
}
