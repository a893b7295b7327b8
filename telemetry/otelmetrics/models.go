package otelmetrics

import (
	"context"

	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// ModelObserver adapts a [modelfailover.Failover]'s measurements to the instruments,
// as telemetry.ModelObserver does for Prometheus. Give it to
// modelfailover.Config.Observer, then Watch the Failover.
//
//   - Each announced change of serving route adds one to agentbreaker.model.failovers
//     and one "agentbreaker.failover" event to the span in the call's context.
//   - Each call a fallback answered adds one to agentbreaker.model.fallback_calls.
//   - agentbreaker.model.fallback_ratio and agentbreaker.model.route_serving are read
//     from the watched Failover at every collection. Do not also call
//     [Metrics.RouteServing] or [Metrics.FallbackShare] for the same routes.
//
// It is safe for concurrent use.
type ModelObserver struct{ m *Metrics }

var _ modelfailover.Observer = (*ModelObserver)(nil)

// ModelObserver returns the adapter for model failover measurements. A Metrics has
// one: later calls return the same adapter.
func (m *Metrics) ModelObserver() *ModelObserver {
	m.model1.Do(func() { m.modelObs = &ModelObserver{m: m} })
	return m.modelObs
}

// Watch tells the adapter which Failover to read the serving route and the fallback
// share from at collection time. A later Watch replaces it.
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.m.s.WatchFailover(f) }

// ObserveCall counts a call a fallback answered.
func (o *ModelObserver) ObserveCall(ctx context.Context, c modelfailover.Call) {
	o.m.s.ObserveCall(ctx, c)
}

// ObserveFailover counts one change of serving route and adds it to the span in ctx.
func (o *ModelObserver) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	o.m.s.ObserveFailover(ctx, e)
}
