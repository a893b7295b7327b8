package probe

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// FromMap returns a Prober for every dependency of m that has a Probe, on top of
// cfg.Checks: a URL probe becomes HTTPGet of it, a Func probe runs as it is. cfg's
// zero MaxInterval takes the map's MaxProbeInterval, and its nil Clock the map's
// clock. It returns nil and no error when nothing is to be probed.
func FromMap(m *dependencymap.Map, cfg Config) (*Prober, error) {
	if cfg.MaxInterval == 0 {
		cfg.MaxInterval = m.MaxProbeInterval()
	}
	if cfg.Clock == nil {
		cfg.Clock = m.Clock()
	}
	checks := append([]Check(nil), cfg.Checks...)
	for _, key := range m.Probed() {
		spec, _ := m.Probe(key)
		b, _ := m.Get(key)
		c := Check{Breaker: b, Func: spec.Func, Name: "func", Timeout: spec.Timeout}
		if spec.URL != "" {
			f, err := HTTPGet(HTTPConfig{URL: spec.URL})
			if err != nil {
				return nil, fmt.Errorf("probe: dependency %q: %w", key, err)
			}
			c.Func, c.Name = f, "GET "+spec.URL
		}
		checks = append(checks, c)
	}
	if len(checks) == 0 {
		return nil, nil
	}
	cfg.Checks = checks
	return New(cfg)
}
