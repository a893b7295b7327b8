package retry

import (
	"fmt"
	"time"
)

// Policy bounds one logical operation. Its zero value means "all defaults"; every field
// documents its default. An Operation's Policy overrides the Retrier's field by field.
type Policy struct {
	// MaxAttempts caps the attempts of one logical operation, the first one included,
	// so 1 turns retries off. From 1 to 100. Defaults to 3.
	MaxAttempts int
	// Deadline caps the time from the operation's start to the start of its last
	// attempt; whichever of MaxAttempts and Deadline runs out first ends the operation.
	// Backoff never sleeps past it. From 1ms to 24h. Defaults to 90s.
	Deadline time.Duration
	// BaseDelay is the backoff ceiling before the first retry; it doubles with every
	// attempt. From 1ms to 1h. Defaults to 100ms.
	BaseDelay time.Duration
	// MaxDelay caps the backoff ceiling. From BaseDelay to 1h. Defaults to 10s.
	MaxDelay time.Duration
	// Version names the policy in every attempt record, so two runs that decided
	// differently can be explained. Defaults to the breaker's policy version when the
	// operation has a breaker, else "".
	Version string
}

// Defaults of Policy.
const (
	defaultMaxAttempts = 3
	defaultDeadline    = 90 * time.Second
	defaultBaseDelay   = 100 * time.Millisecond
	defaultMaxDelay    = 10 * time.Second
)

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.Deadline == 0 {
		p.Deadline = defaultDeadline
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = defaultBaseDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(defaultMaxDelay, p.BaseDelay)
	}
	return p
}

// Validate checks a policy after defaults are applied. It returns a *ConfigError naming
// the first field out of range; field is prefixed to the field name ("Policy.").
func (p Policy) validate(field string) error {
	bad := func(name string, v any, problem string) error {
		return &ConfigError{Package: "retry", Field: field + name, Value: v, Problem: problem}
	}
	switch {
	case p.MaxAttempts < 1 || p.MaxAttempts > 100:
		return bad("MaxAttempts", p.MaxAttempts, "must be between 1 and 100")
	case p.Deadline < time.Millisecond || p.Deadline > 24*time.Hour:
		return bad("Deadline", p.Deadline, "must be between 1ms and 24h")
	case p.BaseDelay < time.Millisecond || p.BaseDelay > time.Hour:
		return bad("BaseDelay", p.BaseDelay, "must be between 1ms and 1h")
	case p.MaxDelay < p.BaseDelay || p.MaxDelay > time.Hour:
		return bad("MaxDelay", p.MaxDelay, fmt.Sprintf("must be between BaseDelay (%s) and 1h", p.BaseDelay))
	}
	return nil
}

// Validate checks a policy after defaults are applied and returns a *ConfigError naming
// the first field that is out of range.
func (p Policy) Validate() error { return p.validate("Policy.") }

// merge returns base with every non-zero field of over written on top.
func merge(base, over Policy) Policy {
	if over.MaxAttempts != 0 {
		base.MaxAttempts = over.MaxAttempts
	}
	if over.Deadline != 0 {
		base.Deadline = over.Deadline
	}
	if over.BaseDelay != 0 {
		base.BaseDelay = over.BaseDelay
	}
	if over.MaxDelay != 0 {
		base.MaxDelay = over.MaxDelay
	}
	if over.Version != "" {
		base.Version = over.Version
	}
	return base
}

// Backoff returns the full-jitter delay to wait after attempt n failed, n counting from
// 0 for the first attempt: u (uniform in [0, 1)) times min(maxDelay, base·2^n). Spreading
// every client's wait over the whole interval, rather than waiting the interval itself,
// keeps clients that failed together from retrying together. It never overflows.
func Backoff(n int, base, maxDelay time.Duration, u float64) time.Duration {
	ceiling := maxDelay
	if n >= 0 && n < 62 && base > 0 && base <= maxDelay>>n {
		ceiling = base << n
	}
	if u <= 0 || ceiling <= 0 {
		return 0
	}
	if u >= 1 {
		return ceiling
	}
	return time.Duration(u * float64(ceiling))
}
