package metrics

import (
	"context"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
)

// ModelObserver adapts a modelfailover.Failover's measurements to the state: both
// exporters' ModelObserver is this type. It is safe for concurrent use.
type ModelObserver struct{ s *State }

var _ modelfailover.Observer = (*ModelObserver)(nil)

// ModelObserver returns the state's one model observer; nil on a nil State.
func (s *State) ModelObserver() *ModelObserver {
	if s == nil {
		return nil
	}
	s.model1.Do(func() { s.modelObs = &ModelObserver{s: s} })
	return s.modelObs
}

// Watch tells the observer which Failover to read the serving route and the fallback
// share from at collection time. A later Watch replaces it.
func (o *ModelObserver) Watch(f *modelfailover.Failover) { o.s.failover.Store(f) }

// ObserveCall counts a call a fallback answered (agentbreaker_model_fallback_calls_total).
func (o *ModelObserver) ObserveCall(ctx context.Context, c modelfailover.Call) {
	o.s.wire.hear(callKey{ctxKey(ctx), c}) // so that a Wire of the same Failover does not count it again
	o.observeCall(ctx, c)
}

func (o *ModelObserver) observeCall(ctx context.Context, c modelfailover.Call) {
	if c.ServedBy == modelfailover.ServedFallback {
		o.s.countRoute(ctx, FallbackCalls, routeKey(c.FallbackFrom), routeKey(c.Route), string(c.FallbackCause))
	}
}

// ObserveFailover counts one change of serving route and adds it to the span in ctx.
func (o *ModelObserver) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	o.s.wire.hear(failoverKey{ctxKey(ctx), e}) // so that a Wire of the same Failover does not count it again
	o.observeFailover(ctx, e)
}

func (o *ModelObserver) observeFailover(ctx context.Context, e modelfailover.Event) {
	from, to, cause := routeKey(e.From), routeKey(e.To), string(e.Cause)
	if cause == "" {
		cause = bound.Unknown
	}
	o.s.countRoute(ctx, Failovers, from, to, cause)
	if ctx != nil {
		span.Annotate(ctx, span.Decision{Kind: span.DecisionFailover, Dependency: from, State: e.BreakerState.String(),
			PolicyVersion: e.PolicyVersion, From: from, To: to, Cause: cause})
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

// Must returns v, or panics with err: the body of both exporters' MustNew.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
