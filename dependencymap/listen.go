package dependencymap

import (
	"slices"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// The telemetry's Wire subscribes to the map's transitions after New, through
// internal/attach rather than an exported method: the map stays configured by its
// Config, and only this module can add a listener later.
func init() { attach.Register(addListener) }

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
