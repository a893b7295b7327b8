// Package bound keeps metric labels bounded whatever names a model or a dependency
// invents: a cap on the distinct values of each label, one series budget over every
// family, and a sanitiser for label values. The Prometheus telemetry (package
// telemetry) and the OpenTelemetry adapter (telemetry/otelmetrics) both use it, so
// their caps, their fold value ("other") and their overflow accounting are the same
// code rather than two copies that drift.
package bound
