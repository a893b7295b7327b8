package dependencymap

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
)

// Apply changes the policies of a running map to cfg's: every breaker's policy (its
// thresholds, window, cooldowns, probes, Shadow and Version), every throttle's K and
// MinRequests, every adaptive limit's settings, the defaults later on-demand breakers
// get, and PolicyVersion. It is all or nothing: every policy is
// checked before any is applied, and the first problem is returned as a *ConfigError
// naming the field (Dependencies["crm"].Policy.Window) and the value, the old policies
// staying in force. Each breaker keeps its state and the calls of its window the new
// policy can hold (see breaker.Breaker.SetPolicy).
//
// What shapes the map cannot change while it runs: the dependencies and model
// endpoints listed, their tools, hosts, probes and priorities, whether each has a
// throttle or an adaptive limit, a throttle's Window and Buckets, ExemptTools,
// Unannotated, UnannotatedKey, MaxDependencies and MaxProbeInterval. A cfg that
// changes one is refused, naming it. Clock, Rand and OnStateChange are not read: the
// map keeps its own.
func (m *Map) Apply(cfg Config) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cfg.Clock, cfg.Rand, cfg.OnStateChange = m.cfg.Clock, m.cfg.Rand, m.cfg.OnStateChange
	cfg, err := cfg.checked()
	if err != nil {
		return err
	}
	if err := m.sameShape(cfg); err != nil {
		return err
	}
	plan, err := m.plan(cfg)
	if err != nil {
		return err
	}
	retune, err := m.retune(cfg)
	if err != nil {
		return err
	}
	for b, p := range plan {
		if err := b.SetPolicy(p); err != nil { // checked by plan: cannot happen
			panic(err)
		}
	}
	for _, set := range retune {
		if err := set(); err != nil { // checked by retune, a throttle's window by sameShape
			panic(err)
		}
	}
	m.cfg.Default, m.cfg.ModelDefault, m.cfg.PolicyVersion = cfg.Default, cfg.ModelDefault, cfg.PolicyVersion
	m.toolDefault = merge(DefaultToolPolicy, cfg.Default)
	return nil
}

// PolicyVersion returns Config.PolicyVersion of the configuration in force (the last
// one applied).
func (m *Map) PolicyVersion() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg.PolicyVersion
}

// plan computes and checks the policy cfg gives every breaker of the map. m.mu is held.
func (m *Map) plan(cfg Config) (map[*breaker.Breaker]breaker.Policy, error) {
	s := m.snap.Load()
	toolDefault := merge(DefaultToolPolicy, cfg.Default)
	modelDefault := merge(DefaultModelPolicy, cfg.ModelDefault)
	plan := map[*breaker.Breaker]breaker.Policy{}
	add := func(b *breaker.Breaker, p breaker.Policy, field string) error {
		if p.Version == "" {
			p.Version = cfg.PolicyVersion
		}
		if err := checkPolicy(p); err != nil {
			return configerr.Relabel(err, "dependencymap", "Policy.", field)
		}
		plan[b] = p
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(s.keys)) {
		p, field := toolDefault, "Default."
		if dep, ok := cfg.Dependencies[key]; ok {
			p, field = merge(toolDefault, dep.Policy), fmt.Sprintf("Dependencies[%q].Policy.", key)
		}
		if err := add(s.keys[key], p, field); err != nil {
			return nil, err
		}
	}
	listed := map[string]int{}
	for i, me := range cfg.Models {
		listed[ModelKey(me.Model, me.Region)] = i
	}
	for _, key := range slices.Sorted(maps.Keys(s.models)) {
		p, field := modelDefault, "ModelDefault."
		if i, ok := listed[key]; ok {
			p, field = merge(modelDefault, cfg.Models[i].Policy), fmt.Sprintf("Models[%d].Policy.", i)
		}
		if err := add(s.models[key], p, field); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// shape is d without its policy and with its functions reduced to whether they are
// set, which reflect.DeepEqual can compare.
func shape(d Dependency) Dependency {
	d.Policy = breaker.Policy{}
	if d.Probe != nil {
		p := *d.Probe
		if p.Func != nil {
			p.Func, p.URL = nil, p.URL+"\x00func"
		}
		d.Probe = &p
	}
	if d.Throttle != nil {
		t := d.Throttle.WithDefaults()
		t.K, t.MinRequests = 0, 0 // Apply changes them
		if t.Rand != nil {
			t.Rand, t.Name = nil, t.Name+"\x00rand"
		}
		d.Throttle = &t
	}
	if d.Adaptive != nil {
		d.Adaptive = &adaptivelimit.Config{} // Apply changes it
	}
	return d
}

// retune computes and checks what cfg gives the throttles (K and MinRequests) and the
// adaptive limits (all but their Name and Clock), and returns the changes to make.
func (m *Map) retune(cfg Config) ([]func() error, error) {
	var out []func() error
	for _, key := range slices.Sorted(maps.Keys(m.throttles)) {
		c := *cfg.Dependencies[key].Throttle // sameShape: it has one
		if err := c.WithDefaults().Validate(); err != nil {
			return nil, configerr.Relabel(err, "dependencymap", "", fmt.Sprintf("Dependencies[%q].Throttle.", key))
		}
		out = append(out, func() error { return m.throttles[key].SetConfig(c) })
	}
	limits := map[string]*adaptivelimit.Config{}
	fields := map[string]string{}
	for key, dep := range cfg.Dependencies {
		limits[key], fields[key] = dep.Adaptive, fmt.Sprintf("Dependencies[%q].Adaptive.", key)
	}
	for i, me := range cfg.Models {
		key := ModelKey(me.Model, me.Region)
		limits[key], fields[key] = me.Adaptive, fmt.Sprintf("Models[%d].Adaptive.", i)
	}
	for _, key := range slices.Sorted(maps.Keys(m.limits)) {
		c := *limits[key] // sameShape: it has one
		c.Name, c.Clock = key, m.cfg.Clock
		if _, err := adaptivelimit.New(c); err != nil {
			return nil, configerr.Relabel(err, "dependencymap", "", fields[key])
		}
		out = append(out, func() error { return m.limits[key].SetConfig(c) })
	}
	return out, nil
}

// sameShape refuses a cfg that changes what Apply cannot: see Apply. m.mu is held.
func (m *Map) sameShape(cfg Config) error {
	old := m.cfg
	restart := func(field string, v any) error {
		return badConfig(field, v, "cannot change while the map runs (Apply changes policies; this needs a new Map)")
	}
	switch {
	case cfg.Unannotated != old.Unannotated:
		return restart("Unannotated", cfg.Unannotated)
	case cfg.UnannotatedKey != old.UnannotatedKey:
		return restart("UnannotatedKey", cfg.UnannotatedKey)
	case !slices.Equal(cfg.ExemptTools, old.ExemptTools):
		return restart("ExemptTools", cfg.ExemptTools)
	case cfg.MaxDependencies != old.MaxDependencies:
		return restart("MaxDependencies", cfg.MaxDependencies)
	case cfg.MaxProbeInterval != old.MaxProbeInterval:
		return restart("MaxProbeInterval", cfg.MaxProbeInterval)
	}
	for _, key := range slices.Sorted(maps.Keys(cfg.Dependencies)) {
		if _, ok := old.Dependencies[key]; !ok {
			return restart(fmt.Sprintf("Dependencies[%q]", key), "a new dependency")
		}
	}
	for _, key := range slices.Sorted(maps.Keys(old.Dependencies)) {
		dep, ok := cfg.Dependencies[key]
		if !ok {
			return restart(fmt.Sprintf("Dependencies[%q]", key), "removed")
		}
		if !reflect.DeepEqual(shape(dep), shape(old.Dependencies[key])) {
			return restart(fmt.Sprintf("Dependencies[%q]", key), "its tools, hosts, probe, priorities, throttle window or whether it has a throttle or an adaptive limit")
		}
	}
	if len(cfg.Models) != len(old.Models) {
		return restart("Models", fmt.Sprintf("%d endpoints, was %d", len(cfg.Models), len(old.Models)))
	}
	for i, me := range cfg.Models {
		if o := old.Models[i]; me.Model != o.Model || me.Region != o.Region || (me.Adaptive == nil) != (o.Adaptive == nil) {
			return restart(fmt.Sprintf("Models[%d]", i), ModelKey(me.Model, me.Region))
		}
	}
	return nil
}
