package otelmetrics

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// ModelObserver adapts a [modelfailover.Failover]'s measurements to the instruments:
// it is telemetry.ModelObserver, the same type. Give it to
// modelfailover.Config.Observer, then call its Watch(failover). Each announced change
// of serving route adds one to agentbreaker.model.failovers and an
// "agentbreaker.failover" span event; each call a fallback answered adds one to
// agentbreaker.model.fallback_calls; agentbreaker.model.fallback_ratio and
// agentbreaker.model.route_serving are read from the watched Failover at every
// collection (do not also call [Metrics.RouteServing] or [Metrics.FallbackShare] for
// the same routes). It is safe for concurrent use.
type ModelObserver = metrics.ModelObserver

// ModelObserver returns the adapter for model failover measurements. A Metrics has
// one: later calls return the same adapter.
func (m *Metrics) ModelObserver() *ModelObserver { return m.state().ModelObserver() }
