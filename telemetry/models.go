package telemetry

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// ModelObserver adapts a [modelfailover.Failover]'s measurements to the telemetry. Give
// it to modelfailover.Config.Observer, then call its Watch(failover): the Failover
// needs its Observer when it is built, so watching comes after, and a later Watch
// replaces the Failover.
//
//   - Each announced change of serving route (ObserveFailover) adds one to
//     agentbreaker_model_failovers_total{from,to,cause} and one "agentbreaker.failover"
//     event (with attributes) to the span in the call's context. It writes no log
//     record: the Failover writes the one warning per change, to its own Logger.
//   - Each call a fallback answered (ObserveCall) adds one to
//     agentbreaker_model_fallback_calls_total{from,to,cause}, failover or not.
//   - agentbreaker_model_fallback_ratio and agentbreaker_model_route_serving are read
//     from the watched Failover's Stats at every scrape, so they decay with no traffic
//     and always agree with the announcements. Do not also call
//     [Telemetry.RouteServing] or [Telemetry.FallbackShare] for the same routes.
//
// It is safe for concurrent use. The same type serves package otelmetrics.
type ModelObserver = metrics.ModelObserver

// ModelObserver returns the adapter for model failover measurements; the Telemetry's
// collector exports them. A Telemetry has one: later calls return the first adapter.
func (t *Telemetry) ModelObserver() *ModelObserver { return t.state().ModelObserver() }
