package dependencymap

import (
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Unannotated says what a tool without a dependency annotation is guarded by.
type Unannotated uint8

const (
	// OwnKey gives the tool a breaker of its own, keyed by the tool's name (the default).
	OwnKey Unannotated = iota
	// SharedKey puts every unannotated tool behind one breaker, Config.UnannotatedKey.
	SharedKey
	// Exempt leaves unannotated tools unguarded.
	Exempt
)

var unannotatedNames = [...]string{OwnKey: "own_key", SharedKey: "shared", Exempt: "exempt"}

func (u Unannotated) String() string {
	if int(u) < len(unannotatedNames) {
		return unannotatedNames[u]
	}
	return "invalid"
}

// Config describes the dependencies of an agent and their policies.
type Config struct {
	// Default is the policy of every dependency that does not set its own. Zero fields
	// take DefaultToolPolicy's values, then the breaker package's defaults.
	Default breaker.Policy
	// ModelDefault is the policy of every model endpoint that does not set its own.
	// Zero fields take DefaultModelPolicy's values, then the breaker defaults.
	ModelDefault breaker.Policy
	// PolicyVersion is the version carried by every policy that does not name one.
	// Defaults to "".
	PolicyVersion string

	// Dependencies maps a dependency key ("crm") to the tools and hosts that use it and
	// its policy overrides.
	Dependencies map[string]Dependency
	// Models lists model endpoints with policies of their own. Endpoints not listed get
	// ModelDefault when first looked up.
	Models []ModelEndpoint

	// Unannotated decides what guards a tool that no dependency lists. Defaults to OwnKey.
	Unannotated Unannotated
	// UnannotatedKey is the shared key when Unannotated is SharedKey. Required then.
	UnannotatedKey string
	// ExemptTools are never guarded, whatever else says. Defaults to none; the callbacks
	// package adds adk-go's built-in tools.
	ExemptTools []string
	// MaxDependencies caps how many breakers may be created on demand (unannotated tools
	// and unlisted model endpoints), so a stream of tool names a model invents cannot grow
	// the map without bound. In the shared and exempt modes it also caps how many
	// unannotated tool names are remembered for lock-free lookup; later names get the
	// same answer (the shared breaker, or none) without being remembered. Defaults to 1000.
	MaxDependencies int

	// MaxProbeInterval bounds the time between two probes of a dependency with a
	// Probe: the prober built by probe.FromMap probes every Cooldown (without growth)
	// or every MaxProbeInterval when that is shorter. From 10ms to 1h. Defaults to 0:
	// probe.DefaultMaxInterval (30s).
	MaxProbeInterval time.Duration

	// Clock is given to every breaker. Defaults to the system clock.
	Clock clock.Clock
	// Rand is given to every breaker for its cooldown jitter (see breaker.Config.Rand):
	// a seeded source makes a run with jitter repeatable, as the simulator needs. Each
	// breaker calls it under its own lock, so with more than one breaker it must be safe
	// for concurrent use. Defaults to math/rand/v2.Float64.
	Rand func() float64
	// OnStateChange listeners are given to every breaker.
	OnStateChange []func(breaker.Event)
}

// Dependency is one downstream service.
type Dependency struct {
	// Tools are the names of the tools that call this dependency.
	Tools []string
	// Hosts are the host names (host or host:port) it is reached at, for HTTP transports
	// that look breakers up by request host.
	Hosts []string
	// Policy overrides the default policy field by field: its zero fields inherit.
	Policy breaker.Policy
	// Probe is the dependency's health probe. With one, half-open is decided by probes
	// alone and recovery does not wait for traffic (see package probe). Defaults to
	// nil: the first call after the cooldown that may probe is the probe.
	Probe *Probe
	// Throttle, when set, sheds a share of this dependency's calls while its breaker is
	// closed and the dependency handles only part of what it gets (package throttle);
	// its Name and Clock are set from the map. Defaults to nil: no throttle, a closed
	// breaker sends every call.
	Throttle *throttle.Config
	// Priorities gives tools of this dependency a priority for its throttle: the lowest
	// are shed first. Each key must be one of Tools. Tools not listed are Normal.
	// Defaults to none.
	Priorities map[string]throttle.Priority
	// Adaptive, when set, limits this dependency's calls in flight to a limit learned
	// from its latency (package adaptivelimit): calls over it are refused at once with
	// the busy payload, the lowest priorities (Priorities) first, and the refusal never
	// counts as the dependency's failure. Its Name and Clock are set from the map.
	// Defaults to nil: no adaptive limit.
	Adaptive *adaptivelimit.Config
}

// ModelEndpoint is one model served from one region.
type ModelEndpoint struct {
	Model  string
	Region string
	// Policy overrides ModelDefault field by field.
	Policy breaker.Policy
	// Adaptive, when set, limits this endpoint's calls in flight to a limit learned
	// from its latency, as Dependency.Adaptive does for a tool's dependency; its Name
	// (the ModelKey) and Clock are set from the map. Defaults to nil: no limit.
	Adaptive *adaptivelimit.Config
}

// DefaultToolPolicy holds the defaults of tool dependencies that differ from the breaker
// package's: the cooldown doubles after each failed probe (30s, 1m, 2m, 4m), capped at
// MaxCooldown (the larger of Cooldown and 5m), so a dependency that stays down is probed
// less and less often. Set CooldownMultiplier to 1 (in Default or per dependency) for a
// fixed cooldown.
var DefaultToolPolicy = breaker.Policy{
	CooldownMultiplier: 2,
}

// DefaultModelPolicy holds the conservative defaults for model endpoints: a wider window,
// a higher volume gate and a higher rate, because a model breaker that trips easily
// silently sends the fleet to a weaker fallback model.
var DefaultModelPolicy = breaker.Policy{
	FailureRateThreshold: 0.5,
	MinimumCalls:         50,
	Window:               5 * time.Minute,
	Buckets:              10,
	Cooldown:             30 * time.Second,
	CooldownMultiplier:   2,
	MaxCooldown:          5 * time.Minute,
}

// ModelKey is the dependency key of a model endpoint: "model@region", or the model name
// alone when the region is empty.
func ModelKey(model, region string) string {
	if region == "" {
		return model
	}
	return model + "@" + region
}

// MergePolicy returns base with every non-zero field of over written on top: the rule
// by which a dependency's policy inherits from the default one, field by field (a
// negative SlowCallThreshold or WindowCalls in over switches that gate off).
func MergePolicy(base, over breaker.Policy) breaker.Policy { return merge(base, over) }

// merge returns base with every non-zero field of over written on top.
func merge(base, over breaker.Policy) breaker.Policy {
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&base.FailureRateThreshold, over.FailureRateThreshold)
	setInt(&base.MinimumCalls, over.MinimumCalls)
	setInt(&base.Buckets, over.Buckets)
	setInt(&base.WindowCalls, over.WindowCalls) // negative: time-based, overriding base
	set(&base.SlowCallRateThreshold, over.SlowCallRateThreshold)
	set(&base.CooldownMultiplier, over.CooldownMultiplier)
	set(&base.Jitter, over.Jitter)
	setInt(&base.HalfOpenProbes, over.HalfOpenProbes)
	if over.Window != 0 {
		base.Window = over.Window
	}
	if over.SlowCallThreshold != 0 { // negative: off, overriding base
		base.SlowCallThreshold = over.SlowCallThreshold
	}
	if over.Cooldown != 0 {
		base.Cooldown = over.Cooldown
	}
	if over.MaxCooldown != 0 {
		base.MaxCooldown = over.MaxCooldown
	}
	if over.ProbeLease != 0 {
		base.ProbeLease = over.ProbeLease
	}
	if over.MaxRetryAfter != 0 {
		base.MaxRetryAfter = over.MaxRetryAfter
	}
	if over.Version != "" {
		base.Version = over.Version
	}
	base.Shadow = base.Shadow || over.Shadow
	return base
}
