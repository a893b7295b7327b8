package telemetry

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// nameModelFallbackCalls is the counter of per-call fallbacks.
const nameModelFallbackCalls = "agentbreaker_model_fallback_calls_total"

// descModelRouteServing is the serving-route gauge as the ModelObserver exports it at
// scrape time. Name, labels and help are those of the gauge [Telemetry.RouteServing]
// sets, so the series are the same whichever feeds them.
var descModelRouteServing = prometheus.NewDesc(nameRouteServing,
	"1 for the model route serving calls now, 0 for routes that served before.",
	[]string{"model", "region"}, nil)

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
type ModelObserver struct {
	t             *Telemetry
	failover      atomic.Pointer[modelfailover.Failover]
	fallbackCalls *prometheus.CounterVec
}

var (
	_ modelfailover.Observer = (*ModelObserver)(nil)
	_ prometheus.Collector   = (*ModelObserver)(nil)
)

// ModelObserver returns the adapter for model failover measurements, registering its
// collector on the Telemetry's registerer. A Telemetry has one: later calls return the
// first adapter. If registering fails otherwise, the error is logged and the adapter
// still counts, unexported.
func (t *Telemetry) ModelObserver() *ModelObserver {
	o := &ModelObserver{t: t, fallbackCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameModelFallbackCalls,
		Help: "Model calls answered by a route after an earlier route in the order failed or refused them, by the first route that did not serve (from), the route that answered (to) and why; counted whether or not the serving route changed.",
	}, []string{"from", "to", "cause"})}
	if err := t.reg.Register(o); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*ModelObserver); ok {
				return existing
			}
		}
		t.log.Warn("agentbreaker: model failover metrics could not be registered", "error", err.Error())
	}
	return o
}

// Watch tells the adapter which Failover to read the serving route and the fallback
// share from at scrape time. The Failover needs its Observer when it is built, so
// watching comes after. A later Watch replaces the Failover.
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.failover.Store(f) }

// ObserveCall counts a call a fallback answered.
func (o *ModelObserver) ObserveCall(_ context.Context, c modelfailover.Call) {
	if c.ServedBy != modelfailover.ServedFallback {
		return
	}
	cause := string(c.FallbackCause)
	if cause == "" {
		cause = unknownLabel
	}
	from, to, cause := o.t.route.required(routeKey(c.FallbackFrom)), o.t.route.required(routeKey(c.Route)), o.t.cause.value(cause)
	// The series budget has no family of its own for this counter yet: its series
	// are charged to the failover family, under a key of their own.
	if !o.t.admit(famFailovers, 1, from, to, cause, nameModelFallbackCalls) {
		from, to, cause = otherLabel, otherLabel, otherLabel
	}
	o.fallbackCalls.WithLabelValues(from, to, cause).Inc()
}

// ObserveFailover counts one change of serving route and adds it to the span in ctx.
func (o *ModelObserver) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	from, to, cause := routeKey(e.From), routeKey(e.To), string(e.Cause)
	if cause == "" {
		cause = unknownLabel
	}
	lf, lt, lc := o.t.route.required(from), o.t.route.required(to), o.t.cause.value(cause)
	if !o.t.admit(famFailovers, 1, lf, lt, lc) {
		lf, lt, lc = otherLabel, otherLabel, otherLabel
	}
	o.t.failovers.WithLabelValues(lf, lt, lc).Inc()
	if ctx != nil {
		AnnotateSpan(ctx, Decision{Kind: DecisionFailover, Dependency: from, State: e.BreakerState.String(),
			PolicyVersion: e.PolicyVersion, From: from, To: to, Cause: cause})
	}
}

// Describe implements prometheus.Collector. It describes the fallback-call counter
// only: the two gauges use descriptors the Telemetry already registered.
func (o *ModelObserver) Describe(ch chan<- *prometheus.Desc) { o.fallbackCalls.Describe(ch) }

// Collect implements prometheus.Collector: the counter, and the gauges read now from
// the watched Failover.
func (o *ModelObserver) Collect(ch chan<- prometheus.Metric) {
	o.fallbackCalls.Collect(ch)
	f := o.failover.Load()
	if f == nil {
		return
	}
	st := f.Stats()
	ch <- prometheus.MustNewConstMetric(descFallbackRatio, prometheus.GaugeValue, st.Window.FallbackShare)
	for _, r := range f.Routes() {
		m, reg := o.t.model.value(r.Model), o.t.region.value(r.Region)
		// Routes are configured, so they are few; a route the spent series budget
		// refuses is left out rather than folded, which would make two routes one
		// series.
		if !o.t.budget.tryAdmit(seriesKey{fam: famRouteServing, labels: [4]string{m, reg}}, 1) {
			continue
		}
		v := 0.0
		if r.Name == st.Serving.Name {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descModelRouteServing, prometheus.GaugeValue, v, m, reg)
	}
}

// routeKey names a route in labels the way the breakers are named: model@region, or the
// pseudo-route's name when no model is behind it.
func routeKey(e modelfailover.Endpoint) string {
	if e.Model == "" {
		return e.Name
	}
	return dependencymap.ModelKey(e.Model, e.Region)
}
