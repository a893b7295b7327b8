package telemetry

import (
	"context"

	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// ModelObserver adapts a [modelfailover.Failover]'s measurements to the telemetry. Give
// it to modelfailover.Config.Observer, then Watch the Failover.
//
//   - Each announced change of serving route adds one to
//     agentbreaker_model_failovers_total{from,to,cause} and one "agentbreaker.failover"
//     event (with attributes) to the span in the call's context. It writes no log
//     record: the Failover writes the one warning per change, to its own Logger.
//   - Each call a fallback answered adds one to
//     agentbreaker_model_fallback_calls_total{from,to,cause}, failover or not.
//   - agentbreaker_model_fallback_ratio and agentbreaker_model_route_serving are read
//     from the watched Failover's Stats at every scrape, so they decay with no traffic
//     and always agree with the announcements. Do not also call
//     [Telemetry.RouteServing] or [Telemetry.FallbackShare] for the same routes.
//
// It is safe for concurrent use.
type ModelObserver struct{ t *Telemetry }

var _ modelfailover.Observer = (*ModelObserver)(nil)

// ModelObserver returns the adapter for model failover measurements; the Telemetry's
// collector exports them. A Telemetry has one: later calls return the first adapter.
func (t *Telemetry) ModelObserver() *ModelObserver {
	t.model1.Do(func() { t.modelObs = &ModelObserver{t: t} })
	return t.modelObs
}

// Watch tells the adapter which Failover to read the serving route and the fallback
// share from at scrape time. The Failover needs its Observer when it is built, so
// watching comes after. A later Watch replaces the Failover.
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.t.s.WatchFailover(f) }

// ObserveCall counts a call a fallback answered.
func (o *ModelObserver) ObserveCall(ctx context.Context, c modelfailover.Call) {
	o.t.s.ObserveCall(ctx, c)
}

// ObserveFailover counts one change of serving route and adds it to the span in ctx.
func (o *ModelObserver) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	o.t.s.ObserveFailover(ctx, e)
}
