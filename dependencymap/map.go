package dependencymap

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ErrTooManyDependencies is returned when creating a breaker on demand would pass
// Config.MaxDependencies.
var ErrTooManyDependencies = errors.New("dependencymap: too many dependencies")

// Map holds the breakers of an agent's dependencies. It is safe for concurrent use;
// lookups take no lock and allocate nothing once a key exists.
type Map struct {
	cfg         Config
	toolDefault breaker.Policy // DefaultToolPolicy under cfg.Default
	snap        atomic.Pointer[snapshot]
	mu          sync.Mutex // serialises copy-on-write updates of snap
	onDemand    int        // breakers created on demand, guarded by mu
	// remembered counts the unannotated tool names recorded in shared and exempt modes;
	// at most MaxDependencies are.
	remembered atomic.Int64
	// added are the listeners attached after New (internal/attach, for the
	// telemetry's Wire): every breaker of the map calls them after OnStateChange's.
	added atomic.Pointer[[]func(breaker.Event)]
	// joins are called with each breaker made on demand, after the map's lock is
	// released and before the call that made it gets it (a fleet syncs it first);
	// fresh holds those not yet handed to them (under mu).
	joins  atomic.Pointer[[]func(*breaker.Breaker)]
	fresh  []*breaker.Breaker
	freshN atomic.Int32

	// Set by New and never changed: only listed dependencies have throttles.
	throttles map[string]*throttle.Throttle     // dependency key -> throttle
	throttled map[string]Throttled              // tool name -> its throttle and priority
	limits    map[string]*adaptivelimit.Limiter // dependency or model key -> adaptive limit
}

// Throttled is a tool's throttle and priority.
type Throttled struct {
	Throttle *throttle.Throttle // nil when the tool's dependency has none
	Priority throttle.Priority
}

// snapshot is immutable once published.
type snapshot struct {
	tools  map[string]*breaker.Breaker // tool name -> breaker; nil value = exempt
	hosts  map[string]*breaker.Breaker
	keys   map[string]*breaker.Breaker // dependency key -> breaker
	models map[string]*breaker.Breaker // ModelKey -> breaker
	toolOf map[string]string           // tool name -> dependency key
	// bound holds the tool names the configuration or AddTools put under a key ("" for
	// exempt), which a later AddTools may not move; remembered names are not in it.
	bound map[string]string
}

// New builds the map and every breaker its configuration names. It returns a
// *ConfigError naming the field (with the dependency) and the value of the first
// problem it finds; a policy, throttle or adaptive limit refused by its own package
// is named by its place in Config (Dependencies["crm"].Policy.Window).
func New(cfg Config) (*Map, error) {
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	m := &Map{cfg: cfg, toolDefault: merge(DefaultToolPolicy, cfg.Default)}
	s := &snapshot{
		tools:  map[string]*breaker.Breaker{},
		hosts:  map[string]*breaker.Breaker{},
		keys:   map[string]*breaker.Breaker{},
		models: map[string]*breaker.Breaker{},
		toolOf: map[string]string{},
		bound:  boundNames(cfg),
	}
	for i, tool := range cfg.ExemptTools {
		if tool == "" {
			return nil, badConfig(fmt.Sprintf("ExemptTools[%d]", i), tool, "tool name is empty")
		}
		s.tools[tool] = nil
	}
	for _, key := range slices.Sorted(maps.Keys(cfg.Dependencies)) {
		if err := m.addDependency(s, key, cfg.Dependencies[key]); err != nil {
			return nil, err
		}
	}
	if cfg.Unannotated == SharedKey {
		if _, ok := s.keys[cfg.UnannotatedKey]; !ok {
			b, err := m.newBreaker(cfg.UnannotatedKey, m.toolDefault, "unannotated tools")
			if err != nil {
				return nil, configerr.Relabel(err, "dependencymap", "Policy.", "Default.")
			}
			s.keys[cfg.UnannotatedKey] = b
		}
	}
	for i, me := range cfg.Models {
		if err := m.addModel(s, i, me); err != nil {
			return nil, err
		}
	}
	m.snap.Store(s)
	return m, nil
}

// badConfig is New's *ConfigError for field holding v.
func badConfig(field string, v any, problem string) error {
	return &ConfigError{Package: "dependencymap", Field: field, Value: v, Problem: problem}
}

// checked fills cfg's defaults and checks its map-wide fields: the first problem is
// a *ConfigError naming the field and the value.
func (cfg Config) checked() (Config, error) {
	if cfg.MaxDependencies == 0 {
		cfg.MaxDependencies = 1000
	}
	if cfg.MaxDependencies < 0 {
		return cfg, badConfig("MaxDependencies", cfg.MaxDependencies, "must be positive")
	}
	switch cfg.Unannotated {
	case OwnKey, Exempt:
	case SharedKey:
		if cfg.UnannotatedKey == "" {
			return cfg, badConfig("UnannotatedKey", cfg.UnannotatedKey, "required when Unannotated is shared")
		}
	default:
		return cfg, badConfig("Unannotated", cfg.Unannotated, fmt.Sprintf("must be own_key, shared or exempt, not %d", cfg.Unannotated))
	}
	if err := checkPolicy(merge(DefaultToolPolicy, cfg.Default)); err != nil {
		return cfg, configerr.Relabel(err, "dependencymap", "Policy.", "Default.")
	}
	if err := checkPolicy(merge(DefaultModelPolicy, cfg.ModelDefault)); err != nil {
		return cfg, configerr.Relabel(err, "dependencymap", "Policy.", "ModelDefault.")
	}
	if d := cfg.MaxProbeInterval; d != 0 && (d < 10*time.Millisecond || d > time.Hour) {
		return cfg, badConfig("MaxProbeInterval", d, "must be 0 (the default) or between 10ms and 1h")
	}
	return cfg, checkNames(cfg)
}

// addDependency builds the breaker, probe, throttle and limit of the dependency key
// and binds its tools and hosts in s.
func (m *Map) addDependency(s *snapshot, key string, dep Dependency) error {
	field := fmt.Sprintf("Dependencies[%q]", key)
	if key == "" {
		return badConfig("Dependencies key", key, "dependency key is empty")
	}
	b, err := m.newBreaker(key, merge(m.toolDefault, dep.Policy), fmt.Sprintf("dependency %q", key))
	if err != nil {
		return configerr.Relabel(err, "dependencymap", "Policy.", field+".Policy.")
	}
	s.keys[key] = b
	if dep.Probe != nil {
		if err := dep.Probe.check(key); err != nil {
			return err
		}
	}
	if err := m.addThrottle(key, dep); err != nil {
		return configerr.Relabel(err, "dependencymap", "", field+".Throttle.")
	}
	if err := m.addLimiter(key, dep.Adaptive, fmt.Sprintf("dependency %q", key)); err != nil {
		return configerr.Relabel(err, "dependencymap", "", field+".Adaptive.")
	}
	for i, tool := range dep.Tools {
		tf := fmt.Sprintf("%s.Tools[%d]", field, i)
		switch other, dup := s.toolOf[tool]; {
		case tool == "":
			return badConfig(tf, tool, "tool name is empty")
		case dup:
			return badConfig(tf, tool, fmt.Sprintf("already listed under dependency %q", other))
		case slices.Contains(m.cfg.ExemptTools, tool):
			return badConfig(tf, tool, "also listed in ExemptTools")
		}
		s.tools[tool] = b
		s.toolOf[tool] = key
	}
	for i, host := range dep.Hosts {
		hf := fmt.Sprintf("%s.Hosts[%d]", field, i)
		if host == "" {
			return badConfig(hf, host, "host is empty")
		}
		if _, dup := s.hosts[host]; dup {
			return badConfig(hf, host, "already listed under another dependency")
		}
		s.hosts[host] = b
	}
	return nil
}

// addModel builds the breaker and limit of the i-th model endpoint in s.
func (m *Map) addModel(s *snapshot, i int, me ModelEndpoint) error {
	field := fmt.Sprintf("Models[%d]", i)
	if me.Model == "" {
		return badConfig(field+".Model", me.Model, "model name is empty")
	}
	key := ModelKey(me.Model, me.Region)
	if _, dup := s.models[key]; dup {
		return badConfig(field, key, "listed twice")
	}
	b, err := m.newBreaker(key, merge(merge(DefaultModelPolicy, m.cfg.ModelDefault), me.Policy), fmt.Sprintf("model endpoint %q", key))
	if err != nil {
		return configerr.Relabel(err, "dependencymap", "Policy.", field+".Policy.")
	}
	s.models[key] = b
	if err := m.addLimiter(key, me.Adaptive, fmt.Sprintf("Models[%d] (%s)", i, key)); err != nil {
		return configerr.Relabel(err, "dependencymap", "", field+".Adaptive.")
	}
	return nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Map {
	m, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return m
}

func checkPolicy(p breaker.Policy) error { return p.WithDefaults().Validate() }

func (m *Map) newBreaker(name string, p breaker.Policy, what string) (*breaker.Breaker, error) {
	if p.Version == "" {
		p.Version = m.cfg.PolicyVersion
	}
	listeners := append(slices.Clip(m.cfg.OnStateChange), m.dispatch)
	b, err := breaker.New(breaker.Config{Name: name, Policy: p, Clock: m.cfg.Clock, Rand: m.cfg.Rand, OnStateChange: listeners})
	if err != nil {
		return nil, fmt.Errorf("dependencymap: %s: %w", what, err)
	}
	if m.joins.Load() != nil {
		m.fresh = append(m.fresh, b)
		m.freshN.Add(1)
	}
	return b, nil
}

// addThrottle builds a listed dependency's throttle and records its tools' priorities.
func (m *Map) addThrottle(key string, dep Dependency) error {
	for _, tool := range slices.Sorted(maps.Keys(dep.Priorities)) {
		pr := dep.Priorities[tool]
		field := fmt.Sprintf("Dependencies[%q].Priorities[%q]", key, tool)
		if !slices.Contains(dep.Tools, tool) {
			return &ConfigError{Package: "dependencymap", Field: field, Value: pr, Problem: fmt.Sprintf("%q is not one of its Tools", tool)}
		}
		if !pr.Valid() {
			return &ConfigError{Package: "dependencymap", Field: field, Value: pr, Problem: "want low, normal, high or critical"}
		}
	}
	var th *throttle.Throttle
	if dep.Throttle != nil {
		cfg := *dep.Throttle
		cfg.Name = key
		if cfg.Clock == nil {
			cfg.Clock = m.cfg.Clock
		}
		var err error
		if th, err = throttle.New(cfg); err != nil {
			return fmt.Errorf("dependencymap: dependency %q: Throttle: %w", key, err)
		}
		if m.throttles == nil {
			m.throttles = map[string]*throttle.Throttle{}
		}
		m.throttles[key] = th
	}
	if th == nil && len(dep.Priorities) == 0 {
		return nil
	}
	if m.throttled == nil {
		m.throttled = map[string]Throttled{}
	}
	for _, tool := range dep.Tools {
		m.throttled[tool] = Throttled{Throttle: th, Priority: dep.Priorities[tool].Norm()}
	}
	return nil
}

// ThrottleFor returns the throttle of tool's dependency (nil when it has none) and the
// tool's priority from the map. It takes no lock and allocates nothing.
func (m *Map) ThrottleFor(tool string) Throttled {
	if t, ok := m.throttled[tool]; ok {
		return t
	}
	return Throttled{Priority: throttle.Normal}
}

// Throttle returns the throttle of a dependency key, if it has one.
func (m *Map) Throttle(key string) (*throttle.Throttle, bool) {
	t, ok := m.throttles[key]
	return t, ok
}

// Throttles returns every throttle, sorted by dependency key.
func (m *Map) Throttles() []*throttle.Throttle {
	out := make([]*throttle.Throttle, 0, len(m.throttles))
	for _, k := range slices.Sorted(maps.Keys(m.throttles)) {
		out = append(out, m.throttles[k])
	}
	return out
}

// ForTool returns the breaker that guards tool, creating it on first use for an
// unannotated tool. It returns nil, nil for an exempt tool. It takes no lock once the
// tool has been seen.
func (m *Map) ForTool(tool string) (*breaker.Breaker, error) {
	if b, ok := m.snap.Load().tools[tool]; ok {
		return b, nil
	}
	b, err := m.addTool(tool)
	m.joinFresh()
	return b, err
}

// Exempt reports whether tool is left unguarded.
func (m *Map) Exempt(tool string) bool {
	b, ok := m.snap.Load().tools[tool]
	if ok {
		return b == nil
	}
	return m.cfg.Unannotated == Exempt
}

// DependencyOf returns the dependency key of tool and whether the tool is guarded. For
// an unannotated tool it is the key the tool gets (or would get) on first use.
func (m *Map) DependencyOf(tool string) (string, bool) {
	s := m.snap.Load()
	if key, ok := s.toolOf[tool]; ok {
		return key, true
	}
	if b, ok := s.tools[tool]; ok && b == nil {
		return "", false
	}
	switch m.cfg.Unannotated {
	case SharedKey:
		return m.cfg.UnannotatedKey, true
	case Exempt:
		return "", false
	}
	return tool, true
}

func (m *Map) addTool(tool string) (*breaker.Breaker, error) {
	if tool == "" {
		return nil, errors.New(`dependencymap: tool name "" is empty`)
	}
	if m.cfg.Unannotated != OwnKey && m.remembered.Load() >= int64(m.cfg.MaxDependencies) {
		// Shared and exempt tools need no breaker of their own: past the cap their names
		// are answered without being remembered, so invented names cannot grow the map
		// (each name remembered costs a copy of it).
		if m.cfg.Unannotated == SharedKey {
			return m.snap.Load().keys[m.cfg.UnannotatedKey], nil
		}
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.snap.Load()
	if b, ok := s.tools[tool]; ok {
		return b, nil
	}
	var b *breaker.Breaker
	key := tool
	switch m.cfg.Unannotated {
	case Exempt:
		key = ""
	case SharedKey:
		key = m.cfg.UnannotatedKey
		b = s.keys[key]
	case OwnKey:
		if existing, ok := s.keys[tool]; ok {
			// A dependency key that happens to equal the tool's name: same breaker.
			b = existing
			break
		}
		if m.onDemand >= m.cfg.MaxDependencies {
			return nil, fmt.Errorf("%w: tool %q would be breaker number %d (MaxDependencies %d)",
				ErrTooManyDependencies, tool, m.onDemand+1, m.cfg.MaxDependencies)
		}
		var err error
		if b, err = m.newBreaker(tool, m.toolDefault, fmt.Sprintf("tool %q", tool)); err != nil {
			return nil, err
		}
		m.onDemand++
	}
	if m.cfg.Unannotated != OwnKey {
		m.remembered.Add(1)
	}
	next := s.clone()
	next.tools[tool] = b
	if key != "" {
		next.toolOf[tool] = key
		next.keys[key] = b
	}
	m.snap.Store(next)
	return b, nil
}

// ForHost returns the breaker of the dependency reached at host (as listed: host or
// host:port), or nil when no dependency lists it.
func (m *Map) ForHost(host string) *breaker.Breaker { return m.snap.Load().hosts[host] }

// Get returns the breaker of a dependency key or model key.
func (m *Map) Get(key string) (*breaker.Breaker, bool) {
	s := m.snap.Load()
	if b, ok := s.keys[key]; ok {
		return b, true
	}
	b, ok := s.models[key]
	return b, ok
}

// ForModel returns the breaker of a model endpoint, creating it with the model default
// policy on first use.
func (m *Map) ForModel(model, region string) (*breaker.Breaker, error) {
	key := ModelKey(model, region)
	if b, ok := m.snap.Load().models[key]; ok {
		return b, nil
	}
	if model == "" {
		return nil, errors.New(`dependencymap: model name "" is empty`)
	}
	defer m.joinFresh() // after the unlock below
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.snap.Load()
	if b, ok := s.models[key]; ok {
		return b, nil
	}
	if m.onDemand >= m.cfg.MaxDependencies {
		return nil, fmt.Errorf("%w: model endpoint %q (MaxDependencies %d)", ErrTooManyDependencies, key, m.cfg.MaxDependencies)
	}
	b, err := m.newBreaker(key, merge(DefaultModelPolicy, m.cfg.ModelDefault), fmt.Sprintf("model endpoint %q", key))
	if err != nil {
		return nil, err
	}
	m.onDemand++
	next := s.clone()
	next.models[key] = b
	m.snap.Store(next)
	return b, nil
}

// Breakers returns every breaker, dependencies and model endpoints, sorted by name.
func (m *Map) Breakers() []*breaker.Breaker {
	s := m.snap.Load()
	out := make([]*breaker.Breaker, 0, len(s.keys)+len(s.models))
	for _, b := range s.keys {
		out = append(out, b)
	}
	for _, b := range s.models {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *breaker.Breaker) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// Tools returns the tool names of a dependency key, sorted.
func (m *Map) Tools(key string) []string {
	var out []string
	for tool, k := range m.snap.Load().toolOf {
		if k == key {
			out = append(out, tool)
		}
	}
	slices.Sort(out)
	return out
}

func (s *snapshot) clone() *snapshot {
	return &snapshot{
		tools:  maps.Clone(s.tools),
		hosts:  s.hosts, // hosts never change after New
		keys:   maps.Clone(s.keys),
		models: maps.Clone(s.models),
		toolOf: maps.Clone(s.toolOf),
		bound:  maps.Clone(s.bound),
	}
}

// checkNames refuses names that would break what they key: a Prometheus label
// (invalid UTF-8 fails every scrape), a log line or the admin page. Names are checked
// once, here, where configuration enters; empty names keep their own messages below.
func checkNames(cfg Config) error {
	check := func(field, v string) error {
		if v == "" {
			return nil
		}
		if err := redact.CheckName(field, v); err != nil {
			return configerr.Relabel(err, "dependencymap", "", "")
		}
		return nil
	}
	var errs []error
	for i, tool := range cfg.ExemptTools {
		errs = append(errs, check(fmt.Sprintf("ExemptTools[%d]", i), tool))
	}
	for _, key := range slices.Sorted(maps.Keys(cfg.Dependencies)) {
		errs = append(errs, check("Dependencies key", key))
		for i, tool := range cfg.Dependencies[key].Tools {
			errs = append(errs, check(fmt.Sprintf("Dependencies[%q].Tools[%d]", key, i), tool))
		}
		for i, host := range cfg.Dependencies[key].Hosts {
			errs = append(errs, check(fmt.Sprintf("Dependencies[%q].Hosts[%d]", key, i), host))
		}
	}
	errs = append(errs, check("UnannotatedKey", cfg.UnannotatedKey))
	for i, me := range cfg.Models {
		errs = append(errs, check(fmt.Sprintf("Models[%d].Model", i), me.Model), check(fmt.Sprintf("Models[%d].Region", i), me.Region))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
