package dependencymap

import (
	"slices"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// The telemetry's Wire subscribes to the map's transitions after New, through
// internal/attach rather than an exported method: the map stays configured by its
// Config, and only this module can add a listener later.
func init() {
	attach.Register(addListener)
	attach.Register(addJoin)
}

// addJoin makes every breaker m makes on demand from now on pass through join before
// the call that made it gets it: the fleet attaches it and syncs it, so a new breaker
// learns an outage the fleet knows before it admits a call.
func addJoin(m *Map, join func(*breaker.Breaker)) bool {
	if m == nil || join == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var next []func(*breaker.Breaker)
	if cur := m.joins.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, join)
	m.joins.Store(&next)
	return true
}

// joinFresh hands the breakers made on demand since the last call to the joins, with
// the map's lock released. A no-op, one atomic load, when there are none.
func (m *Map) joinFresh() {
	if m.freshN.Load() == 0 {
		return
	}
	m.mu.Lock()
	fresh := m.fresh
	m.fresh = nil
	m.freshN.Store(0)
	joins := m.joins.Load()
	m.mu.Unlock()
	if joins == nil {
		return
	}
	for _, b := range fresh {
		for _, j := range *joins {
			j(b)
		}
	}
}

// addListener makes every breaker of m, those built already and those built later,
// call l after Config.OnStateChange's listeners. It is safe for concurrent use.
func addListener(m *Map, l func(breaker.Event)) bool {
	if m == nil || l == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var next []func(breaker.Event)
	if cur := m.added.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, l)
	m.added.Store(&next)
	return true
}

// dispatch is every breaker's last listener: it calls the listeners added after New.
func (m *Map) dispatch(e breaker.Event) {
	if ls := m.added.Load(); ls != nil {
		for _, l := range *ls {
			l(e)
		}
	}
}
