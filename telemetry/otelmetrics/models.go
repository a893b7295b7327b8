package otelmetrics

import (
	"context"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
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
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.m.failover.Store(f) }

// ObserveCall counts a call a fallback answered.
func (o *ModelObserver) ObserveCall(ctx context.Context, c modelfailover.Call) {
	if c.ServedBy != modelfailover.ServedFallback {
		return
	}
	m := o.m
	cause := string(c.FallbackCause)
	if cause == "" {
		cause = bound.Unknown
	}
	from, to, cause := m.route.Required(routeKey(c.FallbackFrom)), m.route.Required(routeKey(c.Route)), m.cause.Value(cause)
	// Charged to the failover family under a key of its own, as in package telemetry.
	if !m.admit(famFailovers, 1, from, to, cause, instruments[instFallbackCalls].prom) {
		from, to, cause = other, other, other
	}
	m.record(ctx, instFallbackCalls, 1, [4]string{from, to, cause})
}

// ObserveFailover counts one change of serving route and adds it to the span in ctx.
func (o *ModelObserver) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	from, to, cause := routeKey(e.From), routeKey(e.To), string(e.Cause)
	if cause == "" {
		cause = bound.Unknown
	}
	o.m.countFailover(ctx, from, to, cause)
	if ctx != nil {
		span.Annotate(ctx, span.Decision{Kind: span.DecisionFailover, Dependency: from, State: e.BreakerState.String(),
			PolicyVersion: e.PolicyVersion, From: from, To: to, Cause: cause})
	}
}

// collectModels reports the gauges read from the watched Failover.
func (m *Metrics) collectModels(e *emitter) {
	f := m.failover.Load()
	if f == nil {
		return
	}
	st := f.Stats()
	e.emit(instFallbackRatio, st.Window.FallbackShare)
	for _, r := range f.Routes() {
		md, reg := m.model.Value(r.Model), m.region.Value(r.Region)
		// A route the spent budget refuses is left out rather than folded, which would
		// make two routes one series.
		if !m.tryAdmit(famRouteServing, 1, md, reg) {
			continue
		}
		v := 0.0
		if r.Name == st.Serving.Name {
			v = 1
		}
		e.emit(instRouteServing, v, md, reg)
	}
}

// routeKey names a route the way the breakers are named: model@region, or the
// pseudo-route's name when no model is behind it.
func routeKey(e modelfailover.Endpoint) string {
	if e.Model == "" {
		return e.Name
	}
	return dependencymap.ModelKey(e.Model, e.Region)
}
