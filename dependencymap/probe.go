package dependencymap

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// Probe describes a dependency's health probe: a cheap, read-only check that package
// probe runs while the dependency's breaker refuses calls (probe.FromMap builds the
// Prober). Set exactly one of URL and Func.
type Probe struct {
	// URL is a health endpoint, GET on an absolute http or https URL; a 2xx answer is
	// healthy. Defaults to "" (use Func).
	URL string
	// Func is a health check in Go (an MCP ping, a read-only tool call, a model's
	// minimal request); nil means healthy, an error is classified like any call's.
	// Defaults to nil (use URL). It cannot be set from a dependency file.
	Func func(ctx context.Context) error
	// Timeout bounds one probe. From 1ms to the dependency's ProbeLease. Defaults to
	// the smaller of 5s and the ProbeLease.
	Timeout time.Duration
}

// check validates p for dependency key.
func (p *Probe) check(key string) error {
	where := fmt.Sprintf("Dependencies[%q].Probe", key)
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "dependencymap", Field: where + field, Value: v, Problem: problem}
	}
	switch {
	case p.URL == "" && p.Func == nil:
		return bad(".URL", p.URL, "Func is nil too: set one of them")
	case p.URL != "" && p.Func != nil:
		return bad(".URL", p.URL, "Func is set too: set only one of them")
	case p.Timeout < 0:
		return bad(".Timeout", p.Timeout, "must not be negative")
	}
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad(".URL", p.URL, "must be an absolute http or https URL")
		}
	}
	return nil
}

// Probe returns the probe of dependency key, if it has one.
func (m *Map) Probe(key string) (Probe, bool) {
	d, ok := m.cfg.Dependencies[key]
	if !ok || d.Probe == nil {
		return Probe{}, false
	}
	return *d.Probe, true
}

// Probed lists the keys of the dependencies that have a probe, sorted.
func (m *Map) Probed() []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(m.cfg.Dependencies)) {
		if m.cfg.Dependencies[k].Probe != nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// MaxProbeInterval returns Config.MaxProbeInterval.
func (m *Map) MaxProbeInterval() time.Duration { return m.cfg.MaxProbeInterval }

// Clock returns the clock given to every breaker (Config.Clock); nil means the system
// clock.
func (m *Map) Clock() clock.Clock { return m.cfg.Clock }
