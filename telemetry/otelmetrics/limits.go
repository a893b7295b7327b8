package otelmetrics

import (
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// WatchLimits adds a source of adaptive concurrency limits read at every collection.
// A limit whose name an earlier source already listed is skipped. It is safe to call
// at any time.
func (m *Metrics) WatchLimits(src LimitSource) {
	if m == nil || src == nil {
		return
	}
	m.sourceMu.Lock()
	defer m.sourceMu.Unlock()
	var next []LimitSource
	if cur := m.limitSources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	m.limitSources.Store(&next)
}

// collectLimits reports every watched adaptive limit, charging limitSeries to the
// budget per limit as package telemetry does. Limits past the budget (or whose
// sanitised name is "other" or repeats an earlier one) are folded into
// dependency="other": the lowest limit and floor among them, the highest no-load
// latency, their refusals summed.
func (m *Metrics) collectLimits(e *emitter) {
	srcs := m.limitSources.Load()
	if srcs == nil {
		return
	}
	seen := map[string]bool{}
	var folded struct {
		limit, floor, noLoad float64
		refused              [4]uint64
		any                  bool
	}
	for _, src := range *srcs {
		for _, l := range src.Limiters() {
			raw := l.Name()
			if seen[raw] {
				continue
			}
			seen[raw] = true
			label := bound.Sanitize(raw)
			lo, _ := l.Bounds()
			limit, floor, noLoad := float64(l.Limit()), float64(lo), l.NoLoad().Seconds()
			if label == other || seen["\x00"+label] || !m.tryAdmit(famLimit, limitSeries, label) {
				if !folded.any || limit < folded.limit {
					folded.limit = limit
				}
				if !folded.any || floor < folded.floor {
					folded.floor = floor
				}
				folded.noLoad = max(folded.noLoad, noLoad)
				folded.any = true
				for i, pr := range throttle.Priorities() {
					folded.refused[i] += l.Refused(pr)
				}
				continue
			}
			seen["\x00"+label] = true
			e.emit(instAdaptiveLimit, limit, label)
			e.emit(instAdaptiveLimitMin, floor, label)
			e.emit(instAdaptiveNoLoad, noLoad, label)
			for _, pr := range throttle.Priorities() {
				e.emit(instAdaptiveRefused, float64(l.Refused(pr)), label, pr.String())
			}
		}
	}
	if folded.any {
		e.emit(instAdaptiveLimit, folded.limit, other)
		e.emit(instAdaptiveLimitMin, folded.floor, other)
		e.emit(instAdaptiveNoLoad, folded.noLoad, other)
		for i, pr := range throttle.Priorities() {
			e.emit(instAdaptiveRefused, float64(folded.refused[i]), other, pr.String())
		}
	}
}
