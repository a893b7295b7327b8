package depfile

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// check runs every check dependencymap.New would, in the file's terms, and records
// each problem rather than stopping at the first.
func (d *Document) check() {
	f := d.File
	switch f.Unannotated {
	case "", "own_key", "shared", "exempt":
	default:
		d.at("unannotated", f.Unannotated, "want own_key, shared or exempt")
	}
	if f.Unannotated == "shared" && f.UnannotatedKey == "" {
		d.at("unannotated_key", nil, "missing: required when unannotated is shared (the name of the breaker every unannotated tool shares)")
	}
	if f.MaxDependencies < 0 {
		d.at("max_dependencies", literal(strconv.Itoa(f.MaxDependencies)), "must be positive (absent or 0: 1000)")
	}
	for i, tool := range f.ExemptTools {
		if tool == "" {
			d.at(fmt.Sprintf("exempt_tools[%d]", i), "", "a tool name is empty")
		}
	}
	if f.MaxProbeInterval != "" {
		if v, err := time.ParseDuration(f.MaxProbeInterval); err != nil || v <= 0 {
			d.at("max_probe_interval", f.MaxProbeInterval, `want a positive duration such as "30s"`)
		}
	}

	toolDefault := dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, d.policyOf(f.Default, "default"))
	d.checkPolicy(toolDefault, "default", f.Default, "", nil, "")
	modelDefault := dependencymap.MergePolicy(dependencymap.DefaultModelPolicy, d.policyOf(f.ModelDefault, "model_default"))
	d.checkPolicy(modelDefault, "model_default", f.ModelDefault, "", nil, "")

	toolOf, hostOf := map[string]string{}, map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(f.Dependencies)) {
		dep := f.Dependencies[key]
		where := "dependencies." + key
		own := d.policyOf(dep.Policy, where+".policy")
		d.checkPolicy(dependencymap.MergePolicy(toolDefault, own), where+".policy", dep.Policy, "default", &f.Default, "dependency "+key)
		for i, tool := range dep.Tools {
			p := fmt.Sprintf("%s.tools[%d]", where, i)
			switch other, dup := toolOf[tool]; {
			case tool == "":
				d.at(p, "", "a tool name is empty")
			case dup:
				d.at(p, tool, "already listed under dependencies.%s: a tool belongs to one dependency", other)
			case slices.Contains(f.ExemptTools, tool):
				d.at(p, tool, "also listed in exempt_tools")
			default:
				toolOf[tool] = key
			}
		}
		d.checkExtras(where, dep)
		for i, host := range dep.Hosts {
			p := fmt.Sprintf("%s.hosts[%d]", where, i)
			switch other, dup := hostOf[host]; {
			case host == "":
				d.at(p, "", "a host is empty")
			case dup:
				d.at(p, host, "already listed under dependencies.%s: a host belongs to one dependency", other)
			default:
				hostOf[host] = key
			}
		}
	}
	modelAt := map[string]int{}
	for i, m := range f.Models {
		where := fmt.Sprintf("models[%d]", i)
		if m.Model == "" {
			d.at(where+".model", "", "missing or empty: the model name is required")
		}
		key := dependencymap.ModelKey(m.Model, m.Region)
		if first, dup := modelAt[key]; dup {
			d.at(where, key, "listed twice (first as models[%d])", first)
		} else {
			modelAt[key] = i
		}
		own := d.policyOf(m.Policy, where+".policy")
		d.checkPolicy(dependencymap.MergePolicy(modelDefault, own), where+".policy", m.Policy, "model_default", &f.ModelDefault, "model "+key)
		d.checkAdaptive(where, m.Adaptive)
	}
}

// checkExtras checks a dependency's probe, throttle, adaptive limit and priorities.
func (d *Document) checkExtras(where string, dep Dependency) {
	if dep.Probe != nil && dep.Probe.Timeout != "" {
		if v, err := time.ParseDuration(dep.Probe.Timeout); err != nil || v <= 0 {
			d.at(where+".probe.timeout", dep.Probe.Timeout, `want a positive duration such as "2s"`)
		}
	}
	if _, tp := dep.Throttle.config(); tp != nil {
		if tp.key == "" {
			d.at(where+".throttle", nil, "%s", tp.message)
		} else {
			d.at(where+".throttle."+tp.key, tp.value, "%s", tp.message)
		}
	}
	d.checkAdaptive(where, dep.Adaptive)
	if _, tool := priorities(dep.Priorities); tool != "" {
		d.at(where+".priorities."+tool, dep.Priorities[tool], "want low, normal, high or critical")
	}
	for _, tool := range slices.Sorted(maps.Keys(dep.Priorities)) {
		if !slices.Contains(dep.Tools, tool) {
			d.at(where+".priorities."+tool, tool, "not one of this dependency's tools")
		}
	}
}

// policyOf converts a policy, recording each duration that does not parse at
// where.key (nothing is recorded when where is "").
func (d *Document) policyOf(fp Policy, where string) breaker.Policy {
	p := breaker.Policy{
		FailureRateThreshold:  fp.FailureRateThreshold,
		MinimumCalls:          fp.MinimumCalls,
		Buckets:               fp.Buckets,
		WindowCalls:           fp.WindowCalls.value(),
		SlowCallRateThreshold: fp.SlowCallRateThreshold,
		CooldownMultiplier:    fp.CooldownMultiplier,
		Jitter:                fp.Jitter,
		HalfOpenProbes:        fp.HalfOpenProbes,
		Version:               fp.Version,
		Shadow:                fp.Shadow,
	}
	if fp.SlowCallThreshold == Off {
		p.SlowCallThreshold = -1 // off, and not inherited
	}
	for _, dur := range []struct {
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
	} {
		if dur.in == "" || dur.in == Off && dur.name == "slow_call_threshold" {
			continue
		}
		v, err := time.ParseDuration(dur.in)
		if err != nil || v <= 0 {
			if where != "" {
				want := `a positive duration such as "30s"`
				if dur.name == "slow_call_threshold" {
					want += ` or "off"`
				}
				d.at(where+"."+dur.name, dur.in, "want %s", want)
			}
			continue
		}
		*dur.out = v
	}
	return p
}

// policyKeys maps breaker.Policy's field names to the file's keys (depfile.Policy has
// the same field names, with the file's keys as tags).
var policyKeys = func() map[string]string {
	out := map[string]string{}
	for key, f := range fieldsOf(reflect.TypeFor[Policy]()) {
		out[f.Name] = key
	}
	return out
}()

// goNames matches a Policy field name in a breaker message ("between Cooldown (30s)").
var goNames = regexp.MustCompile(`\b(` + strings.Join(slices.Sorted(maps.Keys(policyKeys)), "|") + `)\b`)

// fileValue returns the value fp sets for key, as the file wrote it, or nil when fp
// leaves key unset (zero: inherit).
func fileValue(fp *Policy, key string) any {
	if fp == nil {
		return nil
	}
	f, ok := fieldsOf(reflect.TypeFor[Policy]())[key]
	if !ok {
		return nil
	}
	v := reflect.ValueOf(*fp).FieldByIndex(f.Index)
	if v.IsZero() {
		return nil
	}
	switch x := v.Interface().(type) {
	case string:
		return x
	case IntOrOff:
		if x < 0 {
			return Off
		}
		return literal(strconv.Itoa(int(x)))
	default:
		return literal(fmt.Sprint(x))
	}
}

// checkPolicy validates the policy a key of the file ends up with (own, the path of
// its policy, over inherited, the path of the policy it inherits from) and records
// each field out of range where the file sets it: in own if own sets it, else in
// inherited (naming the owner that inherits it, when the problem is the owner's
// alone), else at own as a built-in default that the rest of the policy contradicts.
func (d *Document) checkPolicy(p breaker.Policy, own string, ownFP Policy, inherited string, inhFP *Policy, owner string) {
	for _, ce := range p.WithDefaults().Problems() {
		key := policyKeys[strings.TrimPrefix(ce.Field, "Policy.")]
		msg := goNames.ReplaceAllStringFunc(ce.Problem, func(name string) string { return policyKeys[name] })
		if v := fileValue(&ownFP, key); v != nil {
			d.at(own+"."+key, v, "%s", msg)
			continue
		}
		if v := fileValue(inhFP, key); v != nil {
			path := inherited + "." + key
			if d.seen[path+"\x00"+msg] {
				continue // the inherited policy's own problem, reported there
			}
			d.at(path, v, "%s (in the policy %s inherits)", msg, owner)
			continue
		}
		// Unset everywhere: the built-in default, which the policy's other values
		// contradict (max_cooldown's default below a long cooldown, say).
		path := own
		for path != "" && d.keys != nil && !d.Has(path) {
			path = parent(path)
		}
		d.at(path, nil, "%s is not set, and its default %v %s", key, ce.Value, msg)
	}
}
