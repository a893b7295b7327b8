package otelmetrics

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// Parts is what the application built, for [Metrics.Wire]; a nil field is a part not
// configured, which exports nothing. Its fields:
//
//	Dependencies *dependencymap.Map      // breakers, transitions, throttles, adaptive limits
//	Failover     *modelfailover.Failover // failovers, fallback calls, serving route, fallback share
//	Fleet        FleetSource             // fleet mode: a *fleet.Fleet
//	Journal      interface{ Backlog }    // a *journal.Journal: its backlog, read at every collection
//	Retrier      *retry.Retrier          // operations its retry budget stopped
//	Tools        []tool.Tool             // calls a tooltimeout wrapper abandoned
//
// It is telemetry.Parts, the same type, so one value wires both paths.
type Parts = metrics.Parts

// Wire exports every instrument of every part in p, with no further call per part:
// the map's breakers, transitions (no OnStateChange needed), throttles and adaptive
// limits, read from the map at every collection (so a key added later reports); the
// failover's failovers, fallback calls, serving route and fallback share (no
// ModelObserver needed); the fleet; the journal's backlog, read at every collection
// within one second; the operations the retrier's budget stopped (no RetryHook
// needed); and the calls the tooltimeout wrappers among the tools abandoned (no
// OnAbandon needed). The calls it replaces keep working, and Wire beside them counts every
// event once; wiring a part again does nothing more. It is safe to call at any time.
func (m *Metrics) Wire(p Parts) {
	if m == nil {
		return
	}
	m.s.Wire(p, m.s.BreakerEvent, m.s.RetryBudgetExhausted, m.ToolAbandoned)
}
