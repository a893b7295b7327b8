package bulkhead

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// ConfigError is the error New and NewGroup return for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ErrFull is the sentinel every rejection unwraps to.
var ErrFull = errors.New("bulkhead: full")

// FullError is returned by TryAcquire when every slot is taken. It unwraps to [ErrFull]
// and is a classify.LocalRejection: the call never left the process.
type FullError struct {
	// Bulkhead is the bulkhead's name (the dependency key).
	Bulkhead string
	// Limit is the bulkhead's size.
	Limit int
	// Sustained is set on the one rejection that made the rejections in the current
	// window reach Config.SustainedRejections: the dependency has been saturated for a
	// while, which deserves its own alert when its breaker is still closed.
	Sustained bool
}

func (e *FullError) Error() string {
	return fmt.Sprintf("bulkhead: %s is full (%d calls in progress)", e.Bulkhead, e.Limit)
}

// Unwrap returns [ErrFull].
func (e *FullError) Unwrap() error { return ErrFull }

// RejectedLocally names the error class of the rejection (classify.ClassBulkheadFull).
func (e *FullError) RejectedLocally() string { return "bulkhead_full" }

// Config configures one Bulkhead.
type Config struct {
	// Name identifies the bulkhead, normally the dependency key. Required.
	Name string
	// Limit is how many calls may be in progress at once. Required; from 1 to 1,000,000.
	Limit int
	// SustainedRejections is how many rejections within SustainedWindow make the
	// saturation "sustained". Defaults to 10.
	SustainedRejections int
	// SustainedWindow is the span rejections are counted over. From 1s to 1h. Defaults
	// to one minute.
	SustainedWindow time.Duration
	// Clock tells the time for the sustained-rejection window. Defaults to the system
	// clock.
	Clock clock.Clock
}

// Bulkhead caps the calls in progress to one dependency, so a slow dependency can hold
// only its own share of the process's capacity. It never queues: a call that finds
// every slot taken is rejected at once. It is safe for concurrent use; acquiring and
// releasing are lock-free, and only rejections take a lock.
type Bulkhead struct {
	name      string
	limit     int64
	sustained int64
	window    time.Duration
	clk       clock.Clock

	inUse    atomic.Int64
	rejected atomic.Int64
	acquired atomic.Int64

	mu          sync.Mutex // guards the rejection window
	windowStart time.Time
	inWindow    int64
	reported    bool
}

// New returns a bulkhead, or a *ConfigError naming the invalid field and value.
func New(cfg Config) (*Bulkhead, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "bulkhead", Field: field, Value: v, Problem: problem}
	}
	if cfg.Name == "" {
		return nil, bad("Config.Name", cfg.Name, "required")
	}
	if cfg.Limit < 1 || cfg.Limit > 1_000_000 {
		return nil, bad("Config.Limit", cfg.Limit, "must be between 1 and 1000000 (bulkhead "+cfg.Name+")")
	}
	if cfg.SustainedRejections == 0 {
		cfg.SustainedRejections = 10
	}
	if cfg.SustainedRejections < 1 {
		return nil, bad("Config.SustainedRejections", cfg.SustainedRejections, "must be positive (bulkhead "+cfg.Name+")")
	}
	if cfg.SustainedWindow == 0 {
		cfg.SustainedWindow = time.Minute
	}
	if cfg.SustainedWindow < time.Second || cfg.SustainedWindow > time.Hour {
		return nil, bad("Config.SustainedWindow", cfg.SustainedWindow, "must be between 1s and 1h (bulkhead "+cfg.Name+")")
	}
	return &Bulkhead{
		name:      cfg.Name,
		limit:     int64(cfg.Limit),
		sustained: int64(cfg.SustainedRejections),
		window:    cfg.SustainedWindow,
		clk:       clock.OrSystem(cfg.Clock),
	}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Bulkhead {
	b, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// Limit returns the bulkhead's size.
func (b *Bulkhead) Limit() int { return int(b.limit) }

// InUse returns how many slots are taken.
func (b *Bulkhead) InUse() int { return int(b.inUse.Load()) }

// TryAcquire takes a slot, or returns a *FullError when none is free. Every nil return
// must be matched by exactly one Release.
func (b *Bulkhead) TryAcquire() error {
	for {
		n := b.inUse.Load()
		if n >= b.limit {
			return b.reject()
		}
		if b.inUse.CompareAndSwap(n, n+1) {
			b.acquired.Add(1)
			return nil
		}
	}
}

// Release gives a slot back. It reports false, and changes nothing, when no slot is
// taken: a release without an acquire is a bug in the caller, and letting the count go
// negative would silently raise the limit.
func (b *Bulkhead) Release() bool {
	for {
		n := b.inUse.Load()
		if n <= 0 {
			return false
		}
		if b.inUse.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (b *Bulkhead) reject() error {
	b.rejected.Add(1)
	now := b.clk.Now()
	b.mu.Lock()
	if b.windowStart.IsZero() || now.Sub(b.windowStart) >= b.window || now.Before(b.windowStart) {
		b.windowStart, b.inWindow, b.reported = now, 0, false
	}
	b.inWindow++
	sustained := b.inWindow >= b.sustained && !b.reported
	if sustained {
		b.reported = true
	}
	b.mu.Unlock()
	return &FullError{Bulkhead: b.name, Limit: int(b.limit), Sustained: sustained}
}

// Snapshot is a view of a bulkhead for metrics and admin pages.
type Snapshot struct {
	Name  string
	Limit int
	InUse int
	// Acquired and Rejected count over the bulkhead's life.
	Acquired, Rejected int64
}

// Snapshot returns the bulkhead's counts now.
func (b *Bulkhead) Snapshot() Snapshot {
	return Snapshot{
		Name:     b.name,
		Limit:    int(b.limit),
		InUse:    int(b.inUse.Load()),
		Acquired: b.acquired.Load(),
		Rejected: b.rejected.Load(),
	}
}
