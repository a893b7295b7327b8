package telemetry_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// TestModelFailoverMetrics runs a real Failover over two local Gemini servers: the
// primary returns 503, the fallback answers, and the metrics must say so.
func TestModelFailoverMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := geminifake.Start(t, geminifake.Config{Name: "us", Reply: geminifake.Reply{Text: "from us"}})
	backup := geminifake.Start(t, geminifake.Config{Name: "eu", Reply: geminifake.Reply{Text: "from eu"}})
	llm := func(s *geminifake.Server) model.LLM {
		m, err := gemini.NewModel(ctx, "gemini-2.5-pro", s.ClientConfig(nil))
		require.NoError(t, err)
		return m
	}
	reg := prometheus.NewPedanticRegistry()
	fc := clock.NewFake(time.Time{})
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: fc})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc,
		ModelDefault:  breaker.Policy{MinimumCalls: 2, Jitter: -1},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent}})
	tel.Watch(deps)
	obs := tel.ModelObserver()
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: "us-central1", LLM: llm(primary)},
			{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: llm(backup)},
		},
		Breakers: deps, Clock: fc, Observer: obs, Logger: slog.New(slog.DiscardHandler),
	})
	obs.Watch(f)

	ask := func() string {
		var text string
		for resp, err := range f.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("hi")}, false) {
			require.NoError(t, err)
			text = resp.Content.Parts[0].Text
		}
		return text
	}
	require.Equal(t, "from us", ask())
	require.NoError(t, primary.Fail(geminifake.Failure{Code: 503}))
	require.Equal(t, "from eu", ask())
	require.Equal(t, "from eu", ask())

	require.NoError(t, testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP agentbreaker_model_failovers_total Model calls moved from one route (model@region) to the next, by cause.
# TYPE agentbreaker_model_failovers_total counter
agentbreaker_model_failovers_total{cause="http_5xx",from="gemini-2.5-pro@us-central1",to="gemini-2.5-pro@europe-west1"} 1
# HELP agentbreaker_model_route_serving 1 for the model route serving calls now, 0 for routes that served before.
# TYPE agentbreaker_model_route_serving gauge
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="europe-west1"} 1
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="us-central1"} 0
# HELP agentbreaker_model_fallback_ratio Share of recent turns served by a model route other than the primary one, as reported by the failover wrapper.
# TYPE agentbreaker_model_fallback_ratio gauge
agentbreaker_model_fallback_ratio 0.6666666666666666
# HELP agentbreaker_model_fallback_calls_total Model calls answered by a route after an earlier route in the order failed or refused them, by the first route that did not serve (from), the route that answered (to) and why; counted whether or not the serving route changed.
# TYPE agentbreaker_model_fallback_calls_total counter
agentbreaker_model_fallback_calls_total{cause="breaker_open",from="gemini-2.5-pro@us-central1",to="gemini-2.5-pro@europe-west1"} 1
agentbreaker_model_fallback_calls_total{cause="http_5xx",from="gemini-2.5-pro@us-central1",to="gemini-2.5-pro@europe-west1"} 1
`), "agentbreaker_model_failovers_total", "agentbreaker_model_route_serving", "agentbreaker_model_fallback_ratio",
		"agentbreaker_model_fallback_calls_total"))
	require.Equal(t, 2, primary.Requests(), "one answer, one 503 that tripped it; the third call never left")
	require.Equal(t, 2, backup.Requests())
}

// A Telemetry has one model observer: asking again returns the same one, its collector
// is registered once, and before it watches a Failover it exports no gauge.
func TestModelObserverIsOnePerTelemetry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	obs := tel.ModelObserver()
	require.Same(t, obs, tel.ModelObserver())
	n, err := testutil.GatherAndCount(reg, "agentbreaker_model_fallback_ratio", "agentbreaker_model_route_serving",
		"agentbreaker_model_fallback_calls_total")
	require.NoError(t, err)
	require.Zero(t, n, "nothing measured yet")
}
