package telemetry

import (
	"context"
	"sync/atomic"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// ModelObserver adapts a [modelfailover.Failover]'s measurements to the telemetry: each
// change of serving route becomes agentbreaker_model_failovers_total and a WARN record,
// each answered call marks the serving route, and the fallback share is refreshed after
// every call. Give it to modelfailover.Config.Observer, then Watch the Failover.
//
// It is safe for concurrent use.
type ModelObserver struct {
	t        *Telemetry
	failover atomic.Pointer[modelfailover.Failover]
}

var _ modelfailover.Observer = (*ModelObserver)(nil)

// ModelObserver returns an adapter for model failover measurements.
func (t *Telemetry) ModelObserver() *ModelObserver { return &ModelObserver{t: t} }

// Watch tells the adapter which Failover to read the fallback share from. The Failover
// needs its Observer when it is built, so watching comes after.
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.failover.Store(f) }

// ObserveCall marks the route that answered and refreshes the fallback share.
func (o *ModelObserver) ObserveCall(c modelfailover.Call) {
	if c.ServedBy == modelfailover.ServedPrimary || c.ServedBy == modelfailover.ServedFallback {
		o.t.RouteServing(c.Route.Model, c.Route.Region)
	}
	if f := o.failover.Load(); f != nil {
		o.t.FallbackShare(f.Stats().Window.FallbackShare)
	}
}

// ObserveFailover counts and logs one change of serving route.
func (o *ModelObserver) ObserveFailover(e modelfailover.Event) {
	o.t.Failover(context.Background(), observe.Failover{
		From:  routeKey(e.From),
		To:    routeKey(e.To),
		Cause: string(e.Cause),
	})
}

// routeKey names a route in labels the way the breakers are named: model@region, or the
// pseudo-route's name when no model is behind it.
func routeKey(e modelfailover.Endpoint) string {
	if e.Model == "" {
		return e.Name
	}
	return dependencymap.ModelKey(e.Model, e.Region)
}
