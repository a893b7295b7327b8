package sim

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// DefaultPolicy is the user's policy when the scenario gives none: the first design
// document's "50% error rate over a 20-call window, 30-second cool-down", that is a
// count window of the last 20 calls and a fixed 30 s cooldown.
//
// A scenario policy is laid over it field by field, with one rule for the window: a
// policy that sets window or buckets and not window_calls asks for a time window, so
// it gets one (DefaultPolicy's count window would otherwise ignore both).
var DefaultPolicy = depfile.Policy{
	FailureRateThreshold: 0.5,
	MinimumCalls:         20,
	WindowCalls:          20,
	Cooldown:             "30s",
	CooldownMultiplier:   1,
}

// UserPolicy returns the policy the agentbreaker-policy strategy's breaker runs: the
// scenario's policy over DefaultPolicy, through dependencymap's tool defaults, with the
// breaker's defaults filled in.
func (s Scenario) UserPolicy() (breaker.Policy, error) {
	cfg, err := s.userConfig()
	if err != nil {
		return breaker.Policy{}, err
	}
	return dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, cfg).WithDefaults(), nil
}

// userConfig is the scenario's policy as a dependencymap Config.Default.
func (s Scenario) userConfig() (breaker.Policy, error) {
	cfg, err := depfile.File{Default: s.filePolicy()}.Config()
	if err != nil {
		return breaker.Policy{}, policyError(err)
	}
	return cfg.Default, nil
}

// DefaultsPolicy is the policy a user of the callbacks plugin gets by default for a tool
// dependency: dependencymap's DefaultToolPolicy (a cooldown that doubles after each
// failed probe) over the breaker package's defaults. The agentbreaker-defaults strategy
// runs it.
func DefaultsPolicy() breaker.Policy {
	return dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, breaker.Policy{}).WithDefaults()
}

// filePolicy is the scenario's policy over DefaultPolicy, in the file's form: every
// field the scenario sets replaces DefaultPolicy's (reflect walks the fields, so a field
// added to depfile.Policy is carried without a change here).
func (s Scenario) filePolicy() depfile.Policy {
	fp := DefaultPolicy
	over := s.Policy
	if over.WindowCalls == 0 && (over.Window != "" || over.Buckets != 0) {
		fp.WindowCalls = -1 // "off": the time window the scenario describes
	}
	dst, src := reflect.ValueOf(&fp).Elem(), reflect.ValueOf(over)
	for i := range src.NumField() {
		if !src.Field(i).IsZero() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return fp
}

// checkPolicyFields returns an error for a field the scenario's policy sets that the
// policy it runs (eff) would ignore, so that no value is accepted and silently dropped.
func (s Scenario) checkPolicyFields(eff breaker.Policy) error {
	over := s.Policy
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "sim", Field: "policy." + field, Value: v, Problem: problem}
	}
	count := eff.WindowCalls > 0
	switch {
	case count && over.Window != "":
		return bad("window", over.Window, fmt.Sprintf("a count window (window_calls %d) ignores it; set window_calls: off for a time window", eff.WindowCalls))
	case count && over.Buckets != 0:
		return bad("buckets", over.Buckets, fmt.Sprintf("a count window (window_calls %d) ignores it; set window_calls: off for a time window", eff.WindowCalls))
	case count && over.MinimumCalls > eff.WindowCalls:
		return bad("minimum_calls", over.MinimumCalls, fmt.Sprintf("a count window holds at most window_calls (%d) calls, so the gate would be %d; raise window_calls, or set window_calls: off for a time window",
			eff.WindowCalls, eff.WindowCalls))
	case over.SlowCallRateThreshold != 0 && eff.SlowCallThreshold <= 0:
		return bad("slow_call_rate_threshold", over.SlowCallRateThreshold, "slow-call tracking is off; set slow_call_threshold too")
	case over.MaxCooldown != "" && eff.CooldownMultiplier == 1:
		return bad("max_cooldown", over.MaxCooldown, "the cooldown is fixed (cooldown_multiplier 1), so nothing grows to the cap; set cooldown_multiplier above 1")
	case over.MaxRetryAfter != "" && s.RetryAfter <= 0:
		return bad("max_retry_after", over.MaxRetryAfter, "the simulated dependency states no delay; set retry_after (with outage_mode error) for one to cap")
	}
	return nil
}

// simPolicy is a policy replay runs, with defaults applied and jitter off: replay feeds
// recorded traffic through one breaker, whose jitter would only blur the trip instant.
func simPolicy(p breaker.Policy) breaker.Policy {
	p = p.WithDefaults()
	p.Jitter = -1
	return p
}

// FilePolicy returns p in the dependency file's form, with only the fields that take
// effect in p: the count window or the time window (window_calls: off), the slow-call
// rate only when slow calls are tracked, the cooldown cap only when the cooldown grows.
// Durations are written short ("1m", not "1m0s"). It is how the simulator prints the
// policy a breaker ran, and what `simulate -deps` reads a dependency's policy into.
func FilePolicy(p breaker.Policy) depfile.Policy {
	p = p.WithDefaults()
	fp := depfile.Policy{
		FailureRateThreshold: p.FailureRateThreshold,
		MinimumCalls:         p.MinimumCalls,
		Cooldown:             shortDuration(p.Cooldown),
		CooldownMultiplier:   p.CooldownMultiplier,
		Jitter:               p.Jitter,
		HalfOpenProbes:       p.HalfOpenProbes,
		ProbeLease:           shortDuration(p.ProbeLease),
		MaxRetryAfter:        shortDuration(p.MaxRetryAfter),
		Version:              p.Version,
	}
	if p.WindowCalls > 0 {
		fp.WindowCalls = depfile.IntOrOff(p.WindowCalls)
		fp.MinimumCalls = min(p.MinimumCalls, p.WindowCalls)
	} else {
		fp.WindowCalls, fp.Window, fp.Buckets = -1, shortDuration(p.Window), p.Buckets
	}
	if p.SlowCallThreshold > 0 {
		fp.SlowCallThreshold, fp.SlowCallRateThreshold = shortDuration(p.SlowCallThreshold), p.SlowCallRateThreshold
	} else {
		fp.SlowCallThreshold = depfile.Off
	}
	if p.CooldownMultiplier > 1 {
		fp.MaxCooldown = shortDuration(p.MaxCooldown)
	}
	if p.Jitter < 0 {
		fp.Jitter = -1
	}
	return fp
}

// DescribeWindow says which window p trips on, in the words the command's help and the
// docs use: "a count window of the last 20 calls" or "a time window of the last 60s".
func DescribeWindow(p breaker.Policy) string {
	p = p.WithDefaults()
	if p.WindowCalls > 0 {
		return fmt.Sprintf("a count window of the last %d calls", p.WindowCalls)
	}
	return "a time window of the last " + shortDuration(p.Window)
}

// DescribePolicy is p in one line: the trip rule with its window, the cooldown and how
// it grows, and what closes the breaker.
func DescribePolicy(p breaker.Policy) string {
	p = p.WithDefaults()
	gate := p.MinimumCalls
	if p.WindowCalls > 0 {
		gate = min(gate, p.WindowCalls)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed of ≥%d calls in %s", percent(p.FailureRateThreshold), gate, DescribeWindow(p))
	if p.SlowCallThreshold > 0 {
		fmt.Fprintf(&b, " (or %s slower than %s)", percent(p.SlowCallRateThreshold), shortDuration(p.SlowCallThreshold))
	}
	fmt.Fprintf(&b, ", cooldown %s", shortDuration(p.Cooldown))
	if p.CooldownMultiplier > 1 {
		fmt.Fprintf(&b, " ×%g per failed probe up to %s", p.CooldownMultiplier, shortDuration(p.MaxCooldown))
	} else {
		b.WriteString(" fixed")
	}
	if p.HalfOpenProbes > 1 {
		fmt.Fprintf(&b, ", %d good probes to close", p.HalfOpenProbes)
	}
	return b.String()
}

func percent(f float64) string { return fmt.Sprintf("%g%%", float64(int(f*1000+0.5))/10) }

// shortDuration writes d as a Go duration without zero units: 1m, 90s as 1m30s, 500ms.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// consecutivePolicy is the comparison breaker's: gobreaker's defaults.
type consecutivePolicy struct {
	// MaxConsecutive: it trips when consecutive failures exceed this (gobreaker: > 5).
	MaxConsecutive int
	// Open is how long it stays open before one probe (gobreaker's Timeout: 60 s).
	Open time.Duration
}

var gobreakerDefaults = consecutivePolicy{MaxConsecutive: 5, Open: 60 * time.Second}
