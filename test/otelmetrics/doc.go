// Package otelmetrics tests the OpenTelemetry metrics adapter
// (telemetry/otelmetrics) end to end through OpenTelemetry's Prometheus exporter,
// which the adapter's own module does not depend on: the series it produces are the
// Prometheus telemetry's, name for name, label for label and value for value, and the
// project's alert rules fire on them at the times the alert tests document.
package otelmetrics
