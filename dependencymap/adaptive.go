package dependencymap

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
)

// addLimiter builds the adaptive limit of a listed dependency or model endpoint.
func (m *Map) addLimiter(key string, cfg *adaptivelimit.Config, what string) error {
	if cfg == nil {
		return nil
	}
	c := *cfg
	c.Name = key
	if c.Clock == nil {
		c.Clock = m.cfg.Clock
	}
	l, err := adaptivelimit.New(c)
	if err != nil {
		return fmt.Errorf("dependencymap: %s: Adaptive: %w", what, err)
	}
	if m.limits == nil {
		m.limits = map[string]*adaptivelimit.Limiter{}
	}
	m.limits[key] = l
	return nil
}

// Limiter returns the adaptive limit of a dependency key or a model endpoint's
// ModelKey, or nil when it has none. Limits are built by New and never change, so it
// takes no lock and allocates nothing. Each process keeps its own: a concurrency limit
// counts the calls this replica has in flight, which no other replica can see or
// release (see docs/adaptive-concurrency.md).
func (m *Map) Limiter(key string) *adaptivelimit.Limiter { return m.limits[key] }

// Limiters returns every adaptive limit, sorted by key.
func (m *Map) Limiters() []*adaptivelimit.Limiter {
	out := make([]*adaptivelimit.Limiter, 0, len(m.limits))
	for _, k := range slices.Sorted(maps.Keys(m.limits)) {
		out = append(out, m.limits[k])
	}
	return out
}
