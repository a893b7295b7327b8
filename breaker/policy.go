package breaker

import (
	"math"
	"time"
)

// Policy holds the tunables of one breaker. Its zero value means "all defaults"; every
// field documents its default. Policies are plain values, so a registry can keep one per
// dependency and load them from a file.
type Policy struct {
	// FailureRateThreshold trips the breaker when the share of failed calls in the window
	// reaches it (and MinimumCalls is met). In (0, 1]. Defaults to 0.5.
	FailureRateThreshold float64
	// MinimumCalls is the volume gate: the breaker never trips on fewer calls than this in
	// the window, whatever their rate. At least 1. Defaults to 20.
	MinimumCalls int
	// Window is the span of the rolling window. Low-traffic dependencies want minutes so
	// that the volume gate can be met. From 1s to 1h. Defaults to 60s.
	Window time.Duration
	// Buckets is how many slices the window is cut into; the window slides one bucket at a
	// time. From 1 to 60, and Window/Buckets at least 50ms. Defaults to 10.
	Buckets int
	// WindowCalls, when > 0, makes the window count-based: the last WindowCalls calls,
	// whenever they were made (resilience4j's COUNT_BASED sliding window); Window and
	// Buckets are then ignored, and the volume gate is min(MinimumCalls, WindowCalls).
	// At most 10000. Defaults to 0: the time-based window. A negative value also means
	// the time-based window and, unlike 0, overrides a default that sets WindowCalls
	// (dependencymap merges policies field by field, and 0 means "inherit" there).
	WindowCalls int

	// SlowCallThreshold marks a call slow when it takes at least this long; slow calls can
	// trip the breaker through SlowCallRateThreshold, and a slow probe counts as a failed
	// one. From 1ms to 10m. Defaults to 0, which turns slow-call tracking off. A negative
	// value also turns it off and, unlike 0, overrides a default that turns it on
	// (dependencymap merges policies field by field, and 0 means "inherit" there).
	SlowCallThreshold time.Duration
	// SlowCallRateThreshold trips the breaker when the share of slow calls in the window
	// reaches it (and MinimumCalls is met). In (0, 1]. Defaults to 0.5. Unused when
	// SlowCallThreshold is zero.
	SlowCallRateThreshold float64

	// Cooldown is how long the breaker stays open before it lets a probe through.
	// From 10ms to 24h. Defaults to 30s.
	Cooldown time.Duration
	// CooldownMultiplier grows the cooldown after each consecutive failed probe:
	// Cooldown × CooldownMultiplier^failedProbes, capped at MaxCooldown. From 1 to 10.
	// Defaults to 1 (a fixed cooldown).
	CooldownMultiplier float64
	// MaxCooldown caps the grown cooldown. At least Cooldown. Defaults to the larger of
	// Cooldown and 5m.
	MaxCooldown time.Duration
	// Jitter stretches each cooldown by a random fraction in [0, Jitter), so a fleet that
	// tripped together does not probe together. Below 1. Defaults to 0.1; a negative
	// value turns jitter off.
	Jitter float64

	// HalfOpenProbes is how many probe calls a half-open breaker lets through; all of
	// them must succeed to close it, and any failure reopens it. From 1 to 100.
	// Defaults to 1.
	HalfOpenProbes int
	// ProbeLease is how long a probe may take to report before its slot is given to
	// another probe, so a probe whose caller crashed or was cancelled cannot wedge the
	// breaker half-open. From 10ms to 1h. Defaults to 30s.
	ProbeLease time.Duration

	// MaxRetryAfter caps a delay stated by the dependency (Retry-After, RetryInfo), which
	// otherwise only ever moves the reopen time later. From 1s to 24h. Defaults to 15m.
	MaxRetryAfter time.Duration

	// Shadow runs the dependency's controls without enforcing them: every call is sent,
	// and each control records what it would have done. The breaker itself decides as
	// usual; the call path reads Breaker.Shadow to know not to refuse. Defaults to false
	// (enforcing).
	Shadow bool

	// Version names this policy in every event and log record, so two runs that decided
	// differently can be explained. Defaults to "".
	Version string
}

// Defaults of Policy, exported so documentation and other packages can refer to them.
const (
	DefaultFailureRateThreshold  = 0.5
	DefaultMinimumCalls          = 20
	DefaultWindow                = 60 * time.Second
	DefaultBuckets               = 10
	DefaultSlowCallRateThreshold = 0.5
	DefaultCooldown              = 30 * time.Second
	DefaultMaxCooldown           = 5 * time.Minute
	DefaultJitter                = 0.1
	DefaultHalfOpenProbes        = 1
	DefaultProbeLease            = 30 * time.Second
	DefaultMaxRetryAfter         = 15 * time.Minute
)

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.FailureRateThreshold == 0 {
		p.FailureRateThreshold = DefaultFailureRateThreshold
	}
	if p.MinimumCalls == 0 {
		p.MinimumCalls = DefaultMinimumCalls
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.Buckets == 0 {
		p.Buckets = DefaultBuckets
	}
	if p.SlowCallRateThreshold == 0 {
		p.SlowCallRateThreshold = DefaultSlowCallRateThreshold
	}
	if p.Cooldown == 0 {
		p.Cooldown = DefaultCooldown
	}
	if p.CooldownMultiplier == 0 {
		p.CooldownMultiplier = 1
	}
	if p.MaxCooldown == 0 {
		p.MaxCooldown = max(p.Cooldown, DefaultMaxCooldown)
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultJitter
	}
	if p.HalfOpenProbes == 0 {
		p.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if p.ProbeLease == 0 {
		p.ProbeLease = DefaultProbeLease
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// Validate checks a policy after defaults are applied and returns a *ConfigError naming
// the first field that is out of range (Problems lists all of them).
func (p Policy) Validate() error {
	if probs := p.Problems(); len(probs) > 0 {
		return probs[0]
	}
	return nil
}

// Problems checks a policy after defaults are applied and returns a *ConfigError for
// every field that is out of range, in the order of the fields; nil when it is valid.
// A configuration file's checker (dependencymap/depfile) reports them all at once.
func (p Policy) Problems() []*ConfigError {
	var out []*ConfigError
	bad := func(field string, v any, problem string) {
		out = append(out, &ConfigError{Package: "breaker", Field: "Policy." + field, Value: v, Problem: problem})
	}
	rate := func(v float64) bool { return v > 0 && v <= 1 && !math.IsNaN(v) }
	if !rate(p.FailureRateThreshold) {
		bad("FailureRateThreshold", p.FailureRateThreshold, "must be in (0, 1]")
	}
	if p.MinimumCalls < 1 {
		bad("MinimumCalls", p.MinimumCalls, "must be at least 1")
	}
	if p.WindowCalls > 10000 {
		bad("WindowCalls", p.WindowCalls, "must be at most 10000 (0 or negative: a time-based window)")
	}
	windowOK := p.Window >= time.Second && p.Window <= time.Hour
	if !windowOK {
		bad("Window", p.Window, "must be between 1s and 1h")
	}
	switch {
	case p.Buckets < 1 || p.Buckets > 60:
		bad("Buckets", p.Buckets, "must be between 1 and 60")
	case windowOK && p.Window/time.Duration(p.Buckets) < 50*time.Millisecond:
		// The coarse clock is about 1ms fine, but a saturated process can run its
		// ticker late by a scheduler slice (10–20ms): narrower buckets would misfile calls.
		bad("Buckets", p.Buckets, "makes buckets shorter than 50ms for a window of "+p.Window.String())
	}
	if p.SlowCallThreshold > 0 && (p.SlowCallThreshold < time.Millisecond || p.SlowCallThreshold > 10*time.Minute) {
		bad("SlowCallThreshold", p.SlowCallThreshold, "must be 0 or negative (off) or between 1ms and 10m")
	}
	if !rate(p.SlowCallRateThreshold) {
		bad("SlowCallRateThreshold", p.SlowCallRateThreshold, "must be in (0, 1]")
	}
	cooldownOK := p.Cooldown >= 10*time.Millisecond && p.Cooldown <= 24*time.Hour
	if !cooldownOK {
		bad("Cooldown", p.Cooldown, "must be between 10ms and 24h")
	}
	if p.CooldownMultiplier < 1 || p.CooldownMultiplier > 10 || math.IsNaN(p.CooldownMultiplier) {
		bad("CooldownMultiplier", p.CooldownMultiplier, "must be between 1 and 10")
	}
	if p.MaxCooldown > 24*time.Hour || cooldownOK && p.MaxCooldown < p.Cooldown {
		bad("MaxCooldown", p.MaxCooldown, "must be between Cooldown ("+p.Cooldown.String()+") and 24h")
	}
	if p.Jitter >= 1 || math.IsNaN(p.Jitter) {
		bad("Jitter", p.Jitter, "must be below 1 (negative turns jitter off)")
	}
	if p.HalfOpenProbes < 1 || p.HalfOpenProbes > 100 {
		bad("HalfOpenProbes", p.HalfOpenProbes, "must be between 1 and 100")
	}
	if p.ProbeLease < 10*time.Millisecond || p.ProbeLease > time.Hour {
		bad("ProbeLease", p.ProbeLease, "must be between 10ms and 1h")
	}
	if p.MaxRetryAfter < time.Second || p.MaxRetryAfter > 24*time.Hour {
		bad("MaxRetryAfter", p.MaxRetryAfter, "must be between 1s and 24h")
	}
	return out
}
