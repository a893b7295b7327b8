// Package metrics is the one instrument table of agentbreaker's two metric exporters
// (package telemetry for Prometheus, package otelmetrics for OpenTelemetry) and the
// state behind it: the series budget, the label caps, what events taught about each
// breaker, and the collection that reads breakers, throttles, adaptive limits, the
// fleet and the model failover. It feeds values to a Recorder on the call path and to
// an Observer at collection time; each exporter is a thin adapter of those two.
package metrics
