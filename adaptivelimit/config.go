package adaptivelimit

import (
	"math"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// ConfigError reports one invalid configuration value; it is the module-wide
// agentbreaker.ConfigError.
type ConfigError = agentbreaker.ConfigError

// Defaults. The update interval, the tolerance and the no-load interval are those of
// Envoy's adaptive concurrency filter (its gradient controller's buffer of 25% and
// min-RTT interval of 60 s); the bounds and the initial limit are failsafe-go's
// adaptivelimiter's (1 to 200, starting at 20, the size of agentbreaker's fixed
// bulkhead in the simulator), with a floor of 2 so that one hung call cannot hold
// the whole limit.
const (
	defaultMinLimit       = 2
	defaultMaxLimit       = 200
	DefaultInitialLimit   = 20
	defaultTolerance      = 0.4
	defaultUpdateInterval = 500 * time.Millisecond
	defaultMinSamples     = 10
	defaultNoLoadInterval = time.Minute
)

// Config configures one Limiter. Zero fields take the defaults.
type Config struct {
	// Name identifies the limiter in errors, payloads and metrics: the dependency key.
	// Defaults to "".
	Name string
	// MinLimit is the floor: the limit never falls below it, however slow the
	// dependency gets. From 1 to MaxLimit. Defaults to 2.
	MinLimit int
	// MaxLimit is the ceiling. From MinLimit to 1,000,000. Defaults to 200.
	MaxLimit int
	// InitialLimit is the limit before anything is measured. Between MinLimit and
	// MaxLimit. Defaults to 20, or to the nearest bound when 20 is outside them.
	InitialLimit int
	// Tolerance is how far above the no-load latency the measured latency may rise
	// before the limit falls: the controller aims at noLoad × (1 + Tolerance). From
	// 0.01 to 10. Defaults to 0.4: Envoy's buffer is 0.25 over a min-RTT that
	// aggregates a window's requests, where the no-load latency here is the least
	// single call, below the dependency's typical answer by its own jitter; the extra
	// covers that spread (docs/adaptive-concurrency.md measures the choice).
	Tolerance float64
	// UpdateInterval is how often the limit is recomputed from the calls that finished
	// since the last update (at least MinSamples of them) and from how long calls have
	// been in flight with none finishing. From 1ms to 1m. Defaults to 500ms.
	UpdateInterval time.Duration
	// MinSamples is how many finished calls an update needs; with fewer, the samples
	// are kept for the next one (unless the calls in flight have stalled, see the
	// package doc). From 1 to 1,000,000. Defaults to 10.
	MinSamples int
	// NoLoadInterval is how often the no-load latency is measured again: for that
	// measurement the limit is held at half its value (not below MinLimit) until
	// MinSamples calls admitted under it have finished, and their minimum latency
	// becomes the no-load latency. From 1s to 24h. Defaults to 1m (Envoy's min-RTT
	// interval).
	NoLoadInterval time.Duration
	// Clock is the time source of Acquire, Done and TimedOut. Defaults to the system
	// clock, read through package clock's coarse cache. The ...At forms take the time
	// instead; it must be a reading of this clock (any instant, a fake clock's zero
	// time included, is in range).
	Clock clock.Clock
}

func (cfg Config) withDefaults() (Config, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "adaptivelimit", Field: field, Value: v, Problem: problem}
	}
	if cfg.MaxLimit == 0 {
		cfg.MaxLimit = defaultMaxLimit
	}
	if cfg.MinLimit == 0 {
		cfg.MinLimit = min(defaultMinLimit, cfg.MaxLimit)
	}
	switch {
	case cfg.MaxLimit < 1 || cfg.MaxLimit > 1_000_000:
		return cfg, bad("MaxLimit", cfg.MaxLimit, "must be from 1 to 1,000,000")
	case cfg.MinLimit < 1 || cfg.MinLimit > cfg.MaxLimit:
		return cfg, bad("MinLimit", cfg.MinLimit, "must be from 1 to MaxLimit")
	}
	if cfg.InitialLimit == 0 {
		cfg.InitialLimit = min(max(DefaultInitialLimit, cfg.MinLimit), cfg.MaxLimit)
	}
	if cfg.InitialLimit < cfg.MinLimit || cfg.InitialLimit > cfg.MaxLimit {
		return cfg, bad("InitialLimit", cfg.InitialLimit, "must be between MinLimit and MaxLimit")
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = defaultTolerance
	}
	if math.IsNaN(cfg.Tolerance) || cfg.Tolerance < 0.01 || cfg.Tolerance > 10 {
		return cfg, bad("Tolerance", cfg.Tolerance, "must be from 0.01 to 10")
	}
	if cfg.UpdateInterval == 0 {
		cfg.UpdateInterval = defaultUpdateInterval
	}
	if cfg.UpdateInterval < time.Millisecond || cfg.UpdateInterval > time.Minute {
		return cfg, bad("UpdateInterval", cfg.UpdateInterval, "must be from 1ms to 1m")
	}
	if cfg.MinSamples == 0 {
		cfg.MinSamples = defaultMinSamples
	}
	if cfg.MinSamples < 1 || cfg.MinSamples > 1_000_000 {
		return cfg, bad("MinSamples", cfg.MinSamples, "must be from 1 to 1,000,000")
	}
	if cfg.NoLoadInterval == 0 {
		cfg.NoLoadInterval = defaultNoLoadInterval
	}
	if cfg.NoLoadInterval < time.Second || cfg.NoLoadInterval > 24*time.Hour {
		return cfg, bad("NoLoadInterval", cfg.NoLoadInterval, "must be from 1s to 24h")
	}
	return cfg, nil
}
