package depfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
	yaml "go.yaml.in/yaml/v3"
)

// File is the on-disk form of a dependencymap.Config, in YAML or JSON with the same field names.
// Durations are Go duration strings ("30s", "5m"). Unknown fields are errors, so a typo
// never silently falls back to a default.
type File struct {
	PolicyVersion   string                `json:"policy_version" yaml:"policy_version"`
	Default         Policy                `json:"default" yaml:"default"`
	ModelDefault    Policy                `json:"model_default" yaml:"model_default"`
	Unannotated     string                `json:"unannotated" yaml:"unannotated"`
	UnannotatedKey  string                `json:"unannotated_key" yaml:"unannotated_key"`
	ExemptTools     []string              `json:"exempt_tools" yaml:"exempt_tools"`
	MaxDependencies int                   `json:"max_dependencies" yaml:"max_dependencies"`
	Dependencies    map[string]Dependency `json:"dependencies" yaml:"dependencies"`
	Models          []Model               `json:"models" yaml:"models"`
	// MaxProbeInterval is dependencymap.Config.MaxProbeInterval, a duration.
	MaxProbeInterval string `json:"max_probe_interval" yaml:"max_probe_interval"`
}

// Dependency is dependencymap.Dependency on disk.
type Dependency struct {
	Tools  []string `json:"tools" yaml:"tools"`
	Hosts  []string `json:"hosts" yaml:"hosts"`
	Policy Policy   `json:"policy" yaml:"policy"`
	// Probe is the dependency's health probe; absent means none.
	Probe *Probe `json:"probe" yaml:"probe"`
	// Throttle turns the dependency's throttle on (an empty object: the defaults).
	Throttle *Throttle `json:"throttle" yaml:"throttle"`
	// Priorities maps tool names to low, normal, high or critical.
	Priorities map[string]string `json:"priorities" yaml:"priorities"`
}

// Probe is dependencymap.Probe on disk: a health URL (a Go function cannot be
// written in a file).
type Probe struct {
	URL     string `json:"url" yaml:"url"`
	Timeout string `json:"timeout" yaml:"timeout"`
}

// Throttle is throttle.Config on disk. Absent fields take the throttle's defaults.
type Throttle struct {
	K           float64 `json:"k" yaml:"k"`
	MinRequests int     `json:"min_requests" yaml:"min_requests"`
	Window      string  `json:"window" yaml:"window"`
	Buckets     int     `json:"buckets" yaml:"buckets"`
}

// Model is dependencymap.ModelEndpoint on disk.
type Model struct {
	Model  string `json:"model" yaml:"model"`
	Region string `json:"region" yaml:"region"`
	Policy Policy `json:"policy" yaml:"policy"`
}

// Policy is breaker.Policy on disk. Absent fields inherit.
type Policy struct {
	FailureRateThreshold float64 `json:"failure_rate_threshold" yaml:"failure_rate_threshold"`
	MinimumCalls         int     `json:"minimum_calls" yaml:"minimum_calls"`
	Window               string  `json:"window" yaml:"window"`
	Buckets              int     `json:"buckets" yaml:"buckets"`
	// WindowCalls is a number of calls (a count-based window) or "off" (the time-based
	// window, overriding a default that sets a count); absent or 0 inherits.
	WindowCalls IntOrOff `json:"window_calls" yaml:"window_calls"`
	// SlowCallThreshold is a duration or "off"; absent inherits.
	SlowCallThreshold     string  `json:"slow_call_threshold" yaml:"slow_call_threshold"`
	SlowCallRateThreshold float64 `json:"slow_call_rate_threshold" yaml:"slow_call_rate_threshold"`
	Cooldown              string  `json:"cooldown" yaml:"cooldown"`
	CooldownMultiplier    float64 `json:"cooldown_multiplier" yaml:"cooldown_multiplier"`
	MaxCooldown           string  `json:"max_cooldown" yaml:"max_cooldown"`
	Jitter                float64 `json:"jitter" yaml:"jitter"`
	HalfOpenProbes        int     `json:"half_open_probes" yaml:"half_open_probes"`
	ProbeLease            string  `json:"probe_lease" yaml:"probe_lease"`
	MaxRetryAfter         string  `json:"max_retry_after" yaml:"max_retry_after"`
	Version               string  `json:"version" yaml:"version"`
}

// Load reads a configuration file, YAML (.yaml, .yml) or JSON (.json), and checks it
// completely: the Config it returns builds a Map without error.
func Load(path string) (dependencymap.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return dependencymap.Config{}, fmt.Errorf("dependencymap: %w", err)
	}
	var cfg dependencymap.Config
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		cfg, err = ParseYAML(data)
	case ".json":
		cfg, err = ParseJSON(data)
	default:
		return dependencymap.Config{}, fmt.Errorf("dependencymap: %s: extension %q: want .yaml, .yml or .json", path, ext)
	}
	if err != nil {
		return dependencymap.Config{}, fmt.Errorf("%w (in %s)", err, path)
	}
	return cfg, nil
}

// ParseYAML parses and checks a YAML configuration.
func ParseYAML(data []byte) (dependencymap.Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return dependencymap.Config{}, fmt.Errorf("dependencymap: yaml: %w", err)
	}
	// One document only: a second one would be silently ignored.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return dependencymap.Config{}, fmt.Errorf("dependencymap: yaml: after the first document: %w", err)
		}
		return dependencymap.Config{}, fmt.Errorf("dependencymap: yaml: a second document starts at line %d: want exactly one", extra.Line)
	}
	return f.Config()
}

// ParseJSON parses and checks a JSON configuration.
func ParseJSON(data []byte) (dependencymap.Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return dependencymap.Config{}, fmt.Errorf("dependencymap: json: %w", err)
	}
	// Nothing may follow the object: `{}0` or a second object would be silently ignored.
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return dependencymap.Config{}, fmt.Errorf("dependencymap: json: unexpected data after the top-level value at offset %d: %q",
			off, truncate(bytes.TrimSpace(data[off:]), 20))
	}
	return f.Config()
}

// Config converts and checks the file's contents.
func (f File) Config() (dependencymap.Config, error) {
	cfg := dependencymap.Config{
		PolicyVersion:   f.PolicyVersion,
		UnannotatedKey:  f.UnannotatedKey,
		ExemptTools:     f.ExemptTools,
		MaxDependencies: f.MaxDependencies,
	}
	switch f.Unannotated {
	case "", "own_key":
		cfg.Unannotated = dependencymap.OwnKey
	case "shared":
		cfg.Unannotated = dependencymap.SharedKey
	case "exempt":
		cfg.Unannotated = dependencymap.Exempt
	default:
		return dependencymap.Config{}, fmt.Errorf("dependencymap: unannotated = %q: want own_key, shared or exempt", f.Unannotated)
	}
	var err error
	if f.MaxProbeInterval != "" {
		if cfg.MaxProbeInterval, err = time.ParseDuration(f.MaxProbeInterval); err != nil {
			return dependencymap.Config{}, fmt.Errorf("dependencymap: max_probe_interval = %q: %w", f.MaxProbeInterval, err)
		}
	}
	if cfg.Default, err = f.Default.policy("default"); err != nil {
		return dependencymap.Config{}, err
	}
	if cfg.ModelDefault, err = f.ModelDefault.policy("model_default"); err != nil {
		return dependencymap.Config{}, err
	}
	if len(f.Dependencies) > 0 {
		cfg.Dependencies = make(map[string]dependencymap.Dependency, len(f.Dependencies))
	}
	for key, d := range f.Dependencies {
		p, err := d.Policy.policy(fmt.Sprintf("dependencies.%s.policy", key))
		if err != nil {
			return dependencymap.Config{}, err
		}
		dep := dependencymap.Dependency{Tools: d.Tools, Hosts: d.Hosts, Policy: p}
		if d.Probe != nil {
			dep.Probe = &dependencymap.Probe{URL: d.Probe.URL}
			if d.Probe.Timeout != "" {
				if dep.Probe.Timeout, err = time.ParseDuration(d.Probe.Timeout); err != nil {
					return dependencymap.Config{}, fmt.Errorf("dependencymap: dependencies.%s.probe.timeout = %q: %w", key, d.Probe.Timeout, err)
				}
			}
		}
		if dep.Throttle, err = d.Throttle.config(fmt.Sprintf("dependencies.%s.throttle", key)); err != nil {
			return dependencymap.Config{}, err
		}
		if dep.Priorities, err = priorities(fmt.Sprintf("dependencies.%s.priorities", key), d.Priorities); err != nil {
			return dependencymap.Config{}, err
		}
		cfg.Dependencies[key] = dep
	}
	for i, m := range f.Models {
		p, err := m.Policy.policy(fmt.Sprintf("models[%d] (%s).policy", i, dependencymap.ModelKey(m.Model, m.Region)))
		if err != nil {
			return dependencymap.Config{}, err
		}
		cfg.Models = append(cfg.Models, dependencymap.ModelEndpoint{Model: m.Model, Region: m.Region, Policy: p})
	}
	// Build once so that every policy and name is checked now, with the file's names in
	// the errors, rather than when the agent starts serving.
	if _, err := dependencymap.New(cfg); err != nil {
		return dependencymap.Config{}, err
	}
	return cfg, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// Off is the value that switches off, for one dependency, a feature its default policy
// turns on: `slow_call_threshold: off` turns slow-call tracking off, `window_calls: off`
// makes the window time-based again. An absent field (or 0) inherits.
const Off = "off"

func (fp Policy) policy(where string) (breaker.Policy, error) {
	p := breaker.Policy{
		FailureRateThreshold:  fp.FailureRateThreshold,
		MinimumCalls:          fp.MinimumCalls,
		Buckets:               fp.Buckets,
		SlowCallRateThreshold: fp.SlowCallRateThreshold,
		CooldownMultiplier:    fp.CooldownMultiplier,
		Jitter:                fp.Jitter,
		HalfOpenProbes:        fp.HalfOpenProbes,
		Version:               fp.Version,
	}
	durations := []struct {
		name string
		in   string
		out  *time.Duration
	}{
		{"window", fp.Window, &p.Window},
		{"slow_call_threshold", fp.SlowCallThreshold, &p.SlowCallThreshold},
		{"cooldown", fp.Cooldown, &p.Cooldown},
		{"max_cooldown", fp.MaxCooldown, &p.MaxCooldown},
		{"probe_lease", fp.ProbeLease, &p.ProbeLease},
		{"max_retry_after", fp.MaxRetryAfter, &p.MaxRetryAfter},
	}
	p.WindowCalls = fp.WindowCalls.value()
	if fp.SlowCallThreshold == Off {
		p.SlowCallThreshold = -1 // off, and not inherited
	}
	for _, d := range durations {
		if d.in == "" || d.in == Off && d.name == "slow_call_threshold" {
			continue
		}
		v, err := time.ParseDuration(d.in)
		if err != nil || v <= 0 {
			want := `a positive duration such as "30s"`
			if d.name == "slow_call_threshold" {
				want += ` or "off"`
			}
			return breaker.Policy{}, fmt.Errorf("dependencymap: %s.%s = %q: want %s", where, d.name, d.in, want)
		}
		*d.out = v
	}
	return p, nil
}

// IntOrOff is a count in a configuration file, or the word "off" (stored as -1).
type IntOrOff int

func (v IntOrOff) value() int { return int(v) }

// UnmarshalJSON accepts a number or "off".
func (v *IntOrOff) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != Off {
			return fmt.Errorf("%q: want a number or \"off\"", s)
		}
		*v = -1
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%s: want a number or \"off\"", b)
	}
	if n < 0 {
		return fmt.Errorf("%d: want a positive number or \"off\"", n)
	}
	*v = IntOrOff(n)
	return nil
}

// UnmarshalYAML accepts a number or off.
func (v *IntOrOff) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode && node.Value == Off {
		*v = -1
		return nil
	}
	var n int
	if err := node.Decode(&n); err != nil {
		return fmt.Errorf("line %d: %q: want a number or off", node.Line, node.Value)
	}
	if n < 0 {
		return fmt.Errorf("line %d: %d: want a positive number or off", node.Line, n)
	}
	*v = IntOrOff(n)
	return nil
}

// throttleFields maps throttle.Config's field names to the file's.
var throttleFields = map[string]string{"K": "k", "MinRequests": "min_requests", "Window": "window", "Buckets": "buckets"}

func (ft *Throttle) config(where string) (*throttle.Config, error) {
	if ft == nil {
		return nil, nil
	}
	c := throttle.Config{K: ft.K, MinRequests: ft.MinRequests, Buckets: ft.Buckets}
	if ft.Window != "" {
		v, err := time.ParseDuration(ft.Window)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("dependencymap: %s.window = %q: want a positive duration such as \"30s\"", where, ft.Window)
		}
		c.Window = v
	}
	if err := c.WithDefaults().Validate(); err != nil {
		var ce *throttle.ConfigError
		if errors.As(err, &ce) {
			if field, ok := throttleFields[ce.Field]; ok {
				return nil, fmt.Errorf("dependencymap: %s.%s = %v: %s", where, field, ce.Value, ce.Problem)
			}
		}
		return nil, fmt.Errorf("dependencymap: %s: %w", where, err)
	}
	return &c, nil
}

func priorities(where string, in map[string]string) (map[string]throttle.Priority, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]throttle.Priority, len(in))
	for tool, name := range in {
		pr, err := throttle.ParsePriority(name)
		if err != nil || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("dependencymap: %s.%s = %q: want low, normal, high or critical", where, tool, name)
		}
		out[tool] = pr
	}
	return out, nil
}
