// Package otelmetrics reports what agentbreaker sees as OpenTelemetry metrics, beside
// (or instead of) the Prometheus collectors of package telemetry: for a team whose
// agents already export through an OpenTelemetry pipeline, as adk-go's own telemetry
// does for traces and logs.
//
// It imports the OpenTelemetry metric API only (go.opentelemetry.io/otel/metric), not
// the SDK and not Prometheus: the caller brings the [metric.MeterProvider] (the SDK's,
// with an OTLP or Prometheus exporter), and a user of package telemetry links none of
// this.
//
// # Wiring
//
// A [*Metrics] is an observe.Observer, like a *telemetry.Telemetry, and is wired the
// same way, in one call ([Metrics.Wire]) given what the agent built:
//
//	om := otelmetrics.MustNew(otelmetrics.Config{MeterProvider: mp})
//	deps := dependencymap.MustNew(dependencymap.Config{ /* ... */ })
//	om.Wire(otelmetrics.Parts{Dependencies: deps, Failover: failover, Journal: j, Retrier: r})
//	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: om}})
//
// tooltimeout.Config.OnAbandon takes om.ToolAbandoned. [Parts] is telemetry.Parts, so
// one value wires both paths. The per-part calls (BreakerEvent in the map's
// OnStateChange, Watch, WatchThrottles, WatchLimits, WatchFleet, ModelObserver,
// RetryHook, JournalPending) keep working, and Wire beside them counts every event
// once.
//
// # Instruments
//
// Every measurement of the Prometheus telemetry has an instrument here, named after
// OpenTelemetry's conventions (dots, a unit, no _total), and chosen so that
// OpenTelemetry's Prometheus exporter (go.opentelemetry.io/otel/exporters/prometheus,
// or a collector's prometheus exporter) produces the Prometheus telemetry's names,
// types and labels: agentbreaker.calls ({call}) becomes agentbreaker_calls_total,
// agentbreaker.call.duration (s) agentbreaker_call_duration_seconds,
// agentbreaker.model.fallback_ratio (1) agentbreaker_model_fallback_ratio. The alert
// rules and the Grafana dashboard in deploy/ therefore work on either path, as long as
// the exporter adds suffixes (its default, UnderscoreEscapingWithSuffixes; not
// NoTranslation). docs/operations-metrics.md lists both names of every metric.
//
// Counters of events on the call path are synchronous instruments recorded with an
// attribute set built once per series, so counting a call allocates nothing once its
// series exists. Breaker state, window counts, throttles, adaptive concurrency limits,
// the fleet, the journal and the failover gauges are observable instruments read in
// one callback at collection time, as the Prometheus collectors read them at scrape
// time.
//
// # Cardinality
//
// The attributes are the Prometheus labels (dependency, tool, outcome, error_class,
// ...), bounded and sanitised by the same code: Config.MaxLabelValues distinct values
// per attribute (the library's own classes and causes outside it) and
// Config.MaxSeries series over every instrument, past which new series are reported
// under "other" and counted in agentbreaker.telemetry.series_overflow.
// Session, invocation and function call IDs never become attributes.
//
// # Spans
//
// Each decision is also an event on the span in the call's context (adk-go's
// execute_tool or generate_content span), exactly as package telemetry records it:
// short-circuits, attempts, probes, bulkhead rejections, spent retry budgets, failovers,
// abandoned calls, sheds ("agentbreaker.shed") and the breaker transitions a call's
// admission or report caused ("agentbreaker.transition", with the keys of the
// transition's log record under "agentbreaker.").
package otelmetrics
