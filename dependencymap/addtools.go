package dependencymap

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentbreaker/agentbreaker/redact"
)

// ErrToolBound is returned by AddTools for a tool name that the configuration, or an
// earlier AddTools, already put under another dependency or among the exempt tools.
var ErrToolBound = errors.New("dependencymap: tool already bound")

// AddTools puts tools under the dependency key, at run time, as if Config.Dependencies
// listed them: their calls use the key's breaker and trip together with every other
// tool of the key. It is for tool sets whose members are only known once they are
// listed (an MCP server's tools), and it may be called again when the list changes;
// names already under key cost one lock-free lookup each and no allocation.
//
// A key not in the configuration gets a breaker with the default policy on first use,
// counted against Config.MaxDependencies. A tool name the configuration lists under
// another dependency or in ExemptTools, or that an earlier AddTools bound to another
// key, is refused with an error wrapping ErrToolBound, and the other names are still
// added. A name only remembered from an earlier lookup of an unannotated tool (which
// gave it its own key, the shared key or no breaker) is bound to key from now on.
// AddTools with no tools only makes sure the key exists.
func (m *Map) AddTools(key string, tools ...string) error {
	if key == "" {
		return errors.New(`dependencymap: AddTools: dependency key "" is empty`)
	}
	if _, ok := m.snap.Load().keys[key]; ok && m.allBound(key, tools) {
		return nil
	}
	defer m.joinFresh()
	if err := redact.CheckName("AddTools key", key); err != nil {
		return fmt.Errorf("dependencymap: %w", err)
	}
	for i, tool := range tools {
		if tool == "" {
			return fmt.Errorf(`dependencymap: AddTools(%q): tools[%d] = "": tool name is empty`, key, i)
		}
		if err := redact.CheckName(fmt.Sprintf("AddTools(%q) tools[%d]", key, i), tool); err != nil {
			return fmt.Errorf("dependencymap: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.snap.Load()
	next := s.clone()
	b, ok := s.keys[key]
	if !ok {
		if m.onDemand >= m.cfg.MaxDependencies {
			return fmt.Errorf("%w: dependency %q would be breaker number %d (MaxDependencies %d)",
				ErrTooManyDependencies, key, m.onDemand+1, m.cfg.MaxDependencies)
		}
		var err error
		if b, err = m.newBreaker(key, m.toolDefault, fmt.Sprintf("dependency %q", key)); err != nil {
			return err
		}
		m.onDemand++
		next.keys[key] = b
	}
	var errs []error
	for _, tool := range tools {
		if other, ok := next.bound[tool]; ok && other != key {
			if other == "" {
				errs = append(errs, fmt.Errorf("%w: AddTools(%q): tool %q is in ExemptTools", ErrToolBound, key, tool))
			} else {
				errs = append(errs, fmt.Errorf("%w: AddTools(%q): tool %q is under dependency %q", ErrToolBound, key, tool, other))
			}
			continue
		}
		next.tools[tool] = b
		next.toolOf[tool] = key
		next.bound[tool] = key
	}
	m.snap.Store(next)
	return errors.Join(errs...)
}

// allBound reports whether every tool is already bound to key.
func (m *Map) allBound(key string, tools []string) bool {
	s := m.snap.Load()
	for _, tool := range tools {
		if s.bound[tool] != key {
			return false
		}
	}
	return true
}

// boundNames returns the names the configuration binds: each dependency's tools to its
// key, and the exempt tools to "".
func boundNames(cfg Config) map[string]string {
	out := map[string]string{}
	for _, tool := range cfg.ExemptTools {
		out[tool] = ""
	}
	for key, dep := range cfg.Dependencies {
		for _, tool := range dep.Tools {
			if !slices.Contains(cfg.ExemptTools, tool) {
				out[tool] = key
			}
		}
	}
	return out
}
