package retry

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// BudgetConfig configures the retry budget of each dependency.
type BudgetConfig struct {
	// Ratio caps retries as a share of the operations started against the dependency in
	// the window: 0.1 lets 10 retries through for every 100 operations, however many
	// callers share it. In (0, 1]. Defaults to 0.1.
	Ratio float64
	// MinRetriesPerSecond is a floor on the budget, so that a quiet dependency can
	// still retry: the window always allows MinRetriesPerSecond × Window retries. From 0
	// to 1000; negative turns the floor off. Defaults to 0.1 (one retry per 10s window).
	MinRetriesPerSecond float64
	// Window is how far back operations and retries are counted. From 1s to 1h.
	// Defaults to 10s.
	Window time.Duration
	// MaxDependencies caps how many budgets a Budgets registry creates, so a stream of
	// made-up dependency keys cannot grow it without bound. Defaults to 10000.
	MaxDependencies int
	// Clock is the time source. Defaults to the system clock.
	Clock clock.Clock
}

// Defaults of BudgetConfig.
const (
	defaultBudgetRatio         = 0.1
	defaultMinRetriesPerSecond = 0.1
	defaultBudgetWindow        = 10 * time.Second
	budgetBuckets              = 10
)

func (c BudgetConfig) withDefaults() BudgetConfig {
	if c.Ratio == 0 {
		c.Ratio = defaultBudgetRatio
	}
	if c.MinRetriesPerSecond == 0 {
		c.MinRetriesPerSecond = defaultMinRetriesPerSecond
	}
	if c.Window == 0 {
		c.Window = defaultBudgetWindow
	}
	if c.MaxDependencies == 0 {
		c.MaxDependencies = 10000
	}
	c.Clock = clock.OrSystem(c.Clock)
	return c
}

func (c BudgetConfig) validate() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "retry", Field: "Budget." + field, Value: v, Problem: problem}
	}
	switch {
	case !(c.Ratio > 0 && c.Ratio <= 1):
		return bad("Ratio", c.Ratio, "must be in (0, 1]")
	case math.IsNaN(c.MinRetriesPerSecond) || c.MinRetriesPerSecond > 1000:
		return bad("MinRetriesPerSecond", c.MinRetriesPerSecond, "must be at most 1000")
	case c.Window < time.Second || c.Window > time.Hour:
		return bad("Window", c.Window, "must be between 1s and 1h")
	case c.MaxDependencies < 1:
		return bad("MaxDependencies", c.MaxDependencies, "must be positive")
	}
	return nil
}

// Budget is the retry budget of one dependency: retries are allowed while they stay
// below Ratio of the operations started in the window (plus the floor). When a
// dependency fails, every caller wants to retry at once; a per-call limit lets all of
// them, which multiplies load exactly when it must fall, while a shared budget holds
// the total down. A retry is charged when it is granted, before its backoff, so retries
// waiting to go are counted too.
//
// A Budget is safe for concurrent use. Each method has an ...At form taking the time.
type Budget struct {
	ratio    float64
	floor    float64 // retries always allowed per window
	width    int64   // bucket width in nanoseconds
	clk      clock.Clock
	mu       sync.Mutex
	buckets  [budgetBuckets]budgetBucket
	granted  int64 // over the budget's life, for Stats
	refused  int64
	requests int64
}

type budgetBucket struct {
	epoch    int64 // bucket index since the Unix epoch; 0 = unused
	requests int64
	retries  int64
}

// NewBudget returns a budget for one dependency.
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Budget{
		ratio: cfg.Ratio,
		floor: max(0, cfg.MinRetriesPerSecond) * cfg.Window.Seconds(),
		width: int64(cfg.Window / budgetBuckets),
		clk:   cfg.Clock,
	}, nil
}

// Request counts one operation started against the dependency.
func (b *Budget) Request() { b.RequestAt(b.clk.Now()) }

// RequestAt is Request at the given time.
func (b *Budget) RequestAt(now time.Time) {
	b.mu.Lock()
	b.bucket(now).requests++
	b.requests++
	b.mu.Unlock()
}

// TryRetry charges one retry to the budget and reports whether it was allowed.
func (b *Budget) TryRetry() bool { return b.TryRetryAt(b.clk.Now()) }

// TryRetryAt is TryRetry at the given time.
func (b *Budget) TryRetryAt(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.bucket(now)
	requests, retries := b.sum(cur.epoch)
	// Compare in integers of millionths so that 10% of 10 requests is exactly one retry.
	allowed := b.allowedLocked(requests)
	if (retries+1)*1e6 > allowed {
		b.refused++
		return false
	}
	cur.retries++
	b.granted++
	return true
}

// allowedLocked is how many retries the window allows with requests operations in it,
// in millionths, so that 10% of 10 requests is exactly one retry. Caller holds b.mu.
func (b *Budget) allowedLocked(requests int64) int64 {
	return int64(math.Floor((b.ratio*float64(requests)+b.floor)*1e6 + 0.5))
}

// BudgetStats are a budget's counters.
type BudgetStats struct {
	// WindowRequests and WindowRetries are the operations and retries in the window now.
	WindowRequests, WindowRetries int64
	// Requests, Granted and Refused count over the budget's life.
	Requests, Granted, Refused int64
}

// Stats returns the budget's counters now.
func (b *Budget) Stats() BudgetStats { return b.StatsAt(b.clk.Now()) }

// StatsAt is Stats at the given time.
func (b *Budget) StatsAt(now time.Time) BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	req, ret := b.sum(b.index(now))
	return BudgetStats{WindowRequests: req, WindowRetries: ret, Requests: b.requests, Granted: b.granted, Refused: b.refused}
}

func (b *Budget) index(now time.Time) int64 { return now.UnixNano()/b.width + 1 }

// bucket returns the bucket of now, emptied if it last held an older slice of time.
// Caller holds b.mu.
func (b *Budget) bucket(now time.Time) *budgetBucket {
	idx := b.index(now)
	s := &b.buckets[uint64(idx)%budgetBuckets]
	if s.epoch != idx {
		*s = budgetBucket{epoch: idx}
	}
	return s
}

// sum adds the buckets inside the window ending at bucket idx. Buckets from the future
// (the clock went back) are kept, which errs toward fewer retries. Caller holds b.mu.
func (b *Budget) sum(idx int64) (requests, retries int64) {
	for i := range b.buckets {
		s := &b.buckets[i]
		if s.epoch != 0 && s.epoch > idx-budgetBuckets {
			requests += s.requests
			retries += s.retries
		}
	}
	return requests, retries
}

// Budgets holds one Budget per dependency key, created on first use, so that every
// caller of a dependency draws on the same budget. It is safe for concurrent use.
type Budgets struct {
	cfg BudgetConfig
	mu  sync.RWMutex
	m   map[string]*Budget
}

// NewBudgets returns an empty registry whose budgets all use cfg.
func NewBudgets(cfg BudgetConfig) (*Budgets, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Budgets{cfg: cfg, m: map[string]*Budget{}}, nil
}

// MustNewBudgets is NewBudgets for configurations known to be valid; it panics on error.
func MustNewBudgets(cfg BudgetConfig) *Budgets {
	b, err := NewBudgets(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// For returns the budget of a dependency, creating it on first use.
func (bs *Budgets) For(dependency string) (*Budget, error) {
	bs.mu.RLock()
	b, ok := bs.m[dependency]
	bs.mu.RUnlock()
	if ok {
		return b, nil
	}
	if dependency == "" {
		return nil, &ConfigError{Package: "retry", Field: "Operation.Dependency", Value: `""`, Problem: "is required"}
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[dependency]; ok {
		return b, nil
	}
	if len(bs.m) >= bs.cfg.MaxDependencies {
		return nil, fmt.Errorf("%w: dependency %q would be budget number %d (MaxDependencies %d)",
			ErrTooManyDependencies, dependency, len(bs.m)+1, bs.cfg.MaxDependencies)
	}
	b, err := NewBudget(bs.cfg)
	if err != nil {
		return nil, err
	}
	bs.m[dependency] = b
	return b, nil
}
