// Package span records agentbreaker's decisions on the OpenTelemetry span in a
// context: the code behind telemetry.AnnotateSpan, shared with the OpenTelemetry
// metrics adapter (telemetry/otelmetrics) so both paths write the same events with
// the same keys.
package span
