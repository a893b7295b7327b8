package otelmetrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// operationsPage is docs/operations.md's OpenTelemetry wiring (the page's Go block is
// a run of these lines; test/readme checks it).
func operationsPage(j *journal.Journal, reg *prometheus.Registry) (*callbacks.Callbacks, tooltimeout.Config, error) {
	// Any metric exporter: OTLP to a collector, or Prometheus as here.
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, tooltimeout.Config{}, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	om := otelmetrics.MustNew(otelmetrics.Config{MeterProvider: mp})
	deps := dependencymap.MustNew(dependencymap.Config{
		// ... dependencies and policies ...
	})
	om.Wire(otelmetrics.Parts{Dependencies: deps, Journal: j}) // and Failover, Fleet, Retrier: what you built
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: om}})
	timeouts := tooltimeout.Config{Timeout: 10 * time.Second, OnAbandon: om.ToolAbandoned}
	return guard, timeouts, nil
}

// TestOperationsPageWiringScrapes runs the page's wiring and scrapes it over HTTP with
// promhttp, as Prometheus would: the breakers' families are there under their
// Prometheus names.
func TestOperationsPageWiringScrapes(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	guard, timeouts, err := operationsPage(j, reg)
	require.NoError(t, err)
	require.NotNil(t, guard)
	require.NotNil(t, timeouts.OnAbandon)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "# TYPE agentbreaker_start_time_seconds gauge")
	require.Contains(t, string(body), "agentbreaker_journal_pending_intents{")
	require.Contains(t, string(body), `agentbreaker_telemetry_series_overflow_total{metric="agentbreaker_calls_total",otel_scope_name="github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"`)
	var _ observe.Observer = (*otelmetrics.Metrics)(nil)
}
