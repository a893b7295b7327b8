package telemetry

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// Parts is what the application built, for [Telemetry.Wire]; a nil field is a part not
// configured, which exports nothing. Its fields:
//
//	Dependencies *dependencymap.Map      // breakers, transitions, throttles, adaptive limits
//	Failover     *modelfailover.Failover // failovers, fallback calls, serving route, fallback share
//	Fleet        FleetSource             // fleet mode: a *fleet.Fleet
//	Journal      interface{ Backlog }    // a *journal.Journal: its backlog, read at every collection
//	Retrier      *retry.Retrier          // operations its retry budget stopped
//	Tools        []tool.Tool             // calls a tooltimeout wrapper abandoned
//
// It is otelmetrics.Parts, the same type, so one value wires both paths.
type Parts = metrics.Parts

// Wire exports every family of every part in p, with no further call per part:
//
//   - Dependencies: the breakers (Watch), their transitions (no
//     dependencymap.Config.OnStateChange needed), and the map's throttles and
//     adaptive limits (WatchThrottles, WatchLimits); all are read from the map at
//     every scrape, so a key the map adds later reports without a call;
//   - Failover: its failovers and fallback calls (no modelfailover.Config.Observer
//     needed) and its serving route and fallback share (ModelObserver().Watch);
//   - Fleet: WatchFleet;
//   - Journal: its backlog, read at every scrape (within one second) instead of by
//     WatchJournal;
//   - Retrier: the operations its budget stopped (no RetryHook needed);
//   - Tools: the calls each tooltimeout wrapper among them (found through Unwrap)
//     abandoned (no tooltimeout.Config.OnAbandon needed; a tool that has its own
//     OnAbandon keeps it).
//
// The calls it replaces keep working, and Wire beside them counts every event once:
// a transition tel.BreakerEvent already recorded through the map's OnStateChange, or
// an exhaustion RetryHook(tel) already counted, is not counted again. Wiring a part
// a second time does nothing more. Calls themselves are reported by the callbacks
// given tel as their Observer. It is safe to call at any time.
func (t *Telemetry) Wire(p Parts) {
	if t == nil {
		return
	}
	t.s.Wire(p, t.breakerEvent, t.RetryBudgetExhausted, t.ToolAbandoned)
}
