package probe

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
)

// Func is a health check: it returns nil when the dependency is healthy. Its error is
// classified like any call's (Check.Classify), so a refused connection or a 503 fails
// the probe and a cancellation by the prober's own context does not. It must honour
// ctx: the prober stops waiting for it at Check.Timeout and counts the probe failed,
// but cannot stop a goroutine that ignores its context.
//
// HTTPGet builds one for a health URL; a model route's minimal request, an MCP ping
// or a read-only MCP tool are Funcs too.
type Func func(ctx context.Context) error

// Check is one dependency's probe.
type Check struct {
	// Breaker is the dependency's breaker. Required. The prober attaches to it at New
	// (breaker.Breaker.AttachProber): from then on user calls never probe it.
	Breaker *breaker.Breaker
	// Func is the health check. Required.
	Func Func
	// Name says what the check does in logs and results ("GET https://crm/health",
	// "mcp ping"). Defaults to "func".
	Name string
	// Timeout bounds one probe. From 1ms to the breaker's ProbeLease, so a probe that
	// hangs fails before its lease runs out. Defaults to the smaller of 5s and the
	// ProbeLease.
	Timeout time.Duration
	// Classify turns the check's error into a classification. Defaults to the classify
	// package's rules ([classify.Error]), reading the classification an error carries
	// when it has one (a *ClassifiedError, such as HTTPGet's). It decides the class and
	// whether a failure is an ordinary one or a bad probe (Result.Problem), but it
	// cannot make an error healthy: only a nil error read as healthy passes a probe.
	Classify func(ctx context.Context, err error) classify.Classification
}

// defaultTimeout is Check.Timeout's default when the ProbeLease is longer.
const defaultTimeout = 5 * time.Second

// DefaultMaxInterval is Config.MaxInterval's default.
const DefaultMaxInterval = 30 * time.Second

// Config configures a Prober.
type Config struct {
	// Checks are the probes, one per dependency. Required: at least one, and at most
	// one per breaker.
	Checks []Check
	// MaxInterval bounds the time between two probes of a dependency whose breaker
	// refuses calls. A breaker with a prober probes every Policy.Cooldown, without the
	// growth of CooldownMultiplier (a health check is cheap), or every MaxInterval when
	// that is shorter, each interval stretched by the breaker's Policy.Jitter so
	// dependencies do not probe in lockstep. From 10ms to 1h. Defaults to 30s.
	MaxInterval time.Duration
	// Clock tells the time. Defaults to the system clock. Give the breakers' clock.
	Clock clock.Clock
	// Sleep waits for d or for ctx to be done; Run sleeps with it between rounds.
	// Defaults to a real timer. A test on a fake clock drives ProbeDue itself, or
	// gives a Sleep that advances the fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// AfterFunc starts a probe's Timeout: it calls f after d unless stop is called
	// first. Defaults to time.AfterFunc; tests pass a timer they fire by hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Logger receives one record per failed probe (a panic, a timeout, an error) and
	// a debug record per successful one. Defaults to slog.Default().
	Logger *slog.Logger
	// OnResult hooks receive every probe's Result, on the probing goroutine, outside
	// any lock. Keep them quick. Defaults to none.
	OnResult []func(Result)
}

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError].
type ConfigError = agentbreaker.ConfigError

func bad(field string, v any, problem string) error {
	return &ConfigError{Package: "probe", Field: field, Value: v, Problem: problem}
}

// withDefaults validates cfg and fills its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Checks) == 0 {
		return cfg, bad("Checks", cfg.Checks, "needs at least one check")
	}
	if cfg.MaxInterval == 0 {
		cfg.MaxInterval = DefaultMaxInterval
	}
	if cfg.MaxInterval < 10*time.Millisecond || cfg.MaxInterval > time.Hour {
		return cfg, bad("MaxInterval", cfg.MaxInterval, "must be between 10ms and 1h")
	}
	cfg.Clock = clock.OrSystem(cfg.Clock)
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.AfterFunc == nil {
		cfg.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for i, h := range cfg.OnResult {
		if h == nil {
			return cfg, bad(fmt.Sprintf("OnResult[%d]", i), "nil", "hook is nil")
		}
	}
	checks := make([]Check, len(cfg.Checks))
	seen := map[*breaker.Breaker]int{}
	for i, c := range cfg.Checks {
		field := func(f string) string { return fmt.Sprintf("Checks[%d].%s", i, f) }
		if c.Breaker == nil {
			return cfg, bad(field("Breaker"), "nil", "is required")
		}
		if j, dup := seen[c.Breaker]; dup {
			return cfg, bad(field("Breaker"), c.Breaker.Name(), fmt.Sprintf("is probed by Checks[%d] already", j))
		}
		seen[c.Breaker] = i
		if c.Func == nil {
			return cfg, bad(field("Func"), "nil", "is required")
		}
		if c.Name == "" {
			c.Name = "func"
		}
		lease := c.Breaker.Policy().ProbeLease
		if c.Timeout == 0 {
			c.Timeout = min(defaultTimeout, lease)
		}
		if c.Timeout < time.Millisecond || c.Timeout > lease {
			return cfg, bad(field("Timeout"), c.Timeout, "must be between 1ms and the breaker's ProbeLease ("+lease.String()+")")
		}
		if c.Classify == nil {
			c.Classify = classifyError
		}
		checks[i] = c
	}
	cfg.Checks = checks
	return cfg, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
