package depfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

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
	// Adaptive turns the dependency's adaptive concurrency limit on (an empty object:
	// the defaults).
	Adaptive *Adaptive `json:"adaptive" yaml:"adaptive"`
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
	// Adaptive turns the endpoint's adaptive concurrency limit on.
	Adaptive *Adaptive `json:"adaptive" yaml:"adaptive"`
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
	// Shadow runs the dependency's controls without enforcing them (breaker.Policy.Shadow).
	// Set in the default, it puts every dependency in shadow mode, and a dependency's
	// own "shadow: false" cannot take it out (false is the unset value): to shadow
	// some dependencies only, set it on each of them.
	Shadow bool `json:"shadow" yaml:"shadow"`
}

// Load reads a configuration file, YAML (.yaml, .yml) or JSON (.json), and checks it
// completely: the Config it returns builds a Map without error. A file with problems
// gives an *Error listing every one of them, with its line and column.
func Load(path string) (dependencymap.Config, error) {
	d, err := Read(path)
	if err != nil {
		return dependencymap.Config{}, fmt.Errorf("dependencymap: %w", err)
	}
	return d.Config()
}

// ParseYAML parses and checks a YAML configuration. A problem gives an *Error.
func ParseYAML(data []byte) (dependencymap.Config, error) {
	return parse("", data, false).Config()
}

// ParseJSON parses and checks a JSON configuration. A problem gives an *Error.
func ParseJSON(data []byte) (dependencymap.Config, error) {
	return parse("", data, true).Config()
}

// Config converts and checks the file's contents. A problem gives an *Error (without
// positions: a File built in code has none).
func (f File) Config() (dependencymap.Config, error) {
	d := &Document{File: f}
	d.check()
	return d.Config()
}

// convert builds the dependencymap.Config of a file that check found valid.
func (f File) convert() dependencymap.Config {
	cfg := dependencymap.Config{
		PolicyVersion:   f.PolicyVersion,
		UnannotatedKey:  f.UnannotatedKey,
		ExemptTools:     f.ExemptTools,
		MaxDependencies: f.MaxDependencies,
	}
	switch f.Unannotated {
	case "shared":
		cfg.Unannotated = dependencymap.SharedKey
	case "exempt":
		cfg.Unannotated = dependencymap.Exempt
	default:
		cfg.Unannotated = dependencymap.OwnKey
	}
	cfg.MaxProbeInterval, _ = time.ParseDuration(f.MaxProbeInterval) // check found it valid or absent
	var d Document                                                   // no problems to report: check found none
	cfg.Default = d.policyOf(f.Default, "default")
	cfg.ModelDefault = d.policyOf(f.ModelDefault, "model_default")
	if len(f.Dependencies) > 0 {
		cfg.Dependencies = make(map[string]dependencymap.Dependency, len(f.Dependencies))
	}
	for key, fd := range f.Dependencies {
		dep := dependencymap.Dependency{Tools: fd.Tools, Hosts: fd.Hosts, Policy: d.policyOf(fd.Policy, "")}
		if fd.Probe != nil {
			dep.Probe = &dependencymap.Probe{URL: fd.Probe.URL}
			dep.Probe.Timeout, _ = time.ParseDuration(fd.Probe.Timeout) // valid or absent
		}
		dep.Throttle, _ = fd.Throttle.config()
		dep.Priorities, _ = priorities(fd.Priorities)
		dep.Adaptive, _ = fd.Adaptive.config()
		cfg.Dependencies[key] = dep
	}
	for _, m := range f.Models {
		me := dependencymap.ModelEndpoint{Model: m.Model, Region: m.Region, Policy: d.policyOf(m.Policy, "")}
		me.Adaptive, _ = m.Adaptive.config()
		cfg.Models = append(cfg.Models, me)
	}
	return cfg
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

// throttleProblem is what is wrong with one key of a throttle: the key in the file's
// terms, the value and why.
type throttleProblem struct {
	key     string
	value   any
	message string
}

// config converts a throttle; a value that cannot work gives its problem.
func (ft *Throttle) config() (*throttle.Config, *throttleProblem) {
	if ft == nil {
		return nil, nil
	}
	c := throttle.Config{K: ft.K, MinRequests: ft.MinRequests, Buckets: ft.Buckets}
	if ft.Window != "" {
		v, err := time.ParseDuration(ft.Window)
		if err != nil || v <= 0 {
			return nil, &throttleProblem{"window", ft.Window, `want a positive duration such as "30s"`}
		}
		c.Window = v
	}
	if err := c.WithDefaults().Validate(); err != nil {
		var ce *throttle.ConfigError
		if errors.As(err, &ce) {
			if key, ok := throttleFields[ce.Field]; ok {
				return nil, &throttleProblem{key, ce.Value, ce.Problem}
			}
		}
		return nil, &throttleProblem{"", nil, strings.TrimPrefix(err.Error(), "throttle: ")}
	}
	return &c, nil
}

// priorities converts a dependency's priorities; the first name that is not a
// priority is returned with the tool it was given for.
func priorities(in map[string]string) (map[string]throttle.Priority, string) {
	if len(in) == 0 {
		return nil, ""
	}
	out := make(map[string]throttle.Priority, len(in))
	for _, tool := range slices.Sorted(maps.Keys(in)) {
		pr, err := throttle.ParsePriority(in[tool])
		if err != nil || strings.TrimSpace(in[tool]) == "" {
			return nil, tool
		}
		out[tool] = pr
	}
	return out, ""
}
