package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Config configures a Controller.
type Config struct {
	// Map holds the dependencies' breakers (dependencymap.Map.Get). Required. To drain
	// queues when breakers close, register Controller.OnStateChange in the map's
	// OnStateChange listeners (test/admission/example_test.go in the repository shows the
	// whole wiring, with a SQLite journal).
	Map *dependencymap.Map
	// Journal stores the queue durably. Required.
	Journal QueueStore
	// MinQueuePriority: work below it is rejected while its dependency is open, with
	// reason low_priority. Defaults to PriorityNormal.
	MinQueuePriority Priority
	// MaxQueued caps the items waiting per dependency. Defaults to 1000.
	MaxQueued int
	// Replay runs a queued item again once its dependency has recovered; an error marks
	// the item failed. Required unless every item is queued with ReplayHandOver.
	Replay func(ctx context.Context, it journal.QueueItem) error
	// OnHandOver receives ReplayHandOver items when their dependency recovers. Defaults
	// to none (they are then only reported through OnEvent).
	OnHandOver func(it journal.QueueItem)
	// ReplayRate bounds replays per dependency, in items per second, so a recovered
	// dependency is not flooded by its backlog. From 0.001 to 1000. Defaults to 1.
	ReplayRate float64
	// SweepEvery is how often Run drops expired items and drains the queues of
	// dependencies that are available (their breaker closed without a transition
	// this process saw: after a restart, say). Defaults to 1m.
	SweepEvery time.Duration
	// NewTicker starts Run's sweep ticker. Defaults to time.NewTicker; tests pass a
	// channel they tick by hand.
	NewTicker func(d time.Duration) (c <-chan time.Time, stop func())
	// Sleeper spaces replays. Defaults to retry.SystemSleeper.
	Sleeper retry.Sleeper
	// Clock decides expiry. Defaults to the system clock.
	Clock clock.Clock
	// OnEvent hooks receive every queue event (queued, replayed, replay_failed,
	// expired, handed_over, interrupted), on the goroutine that caused it, outside any
	// lock. Expired items are always reported here. Defaults to none.
	OnEvent []func(Event)
	// Logger, when set, also receives every event. Defaults to none.
	Logger *slog.Logger
}

// Controller decides what happens to new work while a dependency is down, keeps the
// work that may wait in the journal, and replays it when the dependency recovers. It
// is safe for concurrent use.
type Controller struct {
	cfg    Config
	wake   chan struct{}
	mu     sync.Mutex
	wanted map[string]bool // dependencies whose breaker closed and wait for a drain
}

// New returns a Controller, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Controller, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "admission", Field: field, Value: v, Problem: problem}
	}
	switch {
	case cfg.Map == nil:
		return nil, bad("Map", "nil", "is required")
	case cfg.Journal == nil:
		return nil, bad("Journal", "nil", "is required")
	}
	if cfg.MinQueuePriority == 0 {
		cfg.MinQueuePriority = PriorityNormal
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = 1000
	}
	if cfg.MaxQueued < 0 {
		return nil, bad("MaxQueued", cfg.MaxQueued, "must be positive")
	}
	if cfg.ReplayRate == 0 {
		cfg.ReplayRate = 1
	}
	if !(cfg.ReplayRate >= 0.001 && cfg.ReplayRate <= 1000) || math.IsNaN(cfg.ReplayRate) {
		return nil, bad("ReplayRate", cfg.ReplayRate, "must be between 0.001 and 1000 items per second")
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.SweepEvery < 0 {
		return nil, bad("SweepEvery", cfg.SweepEvery, "must be positive")
	}
	if cfg.NewTicker == nil {
		cfg.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if cfg.Sleeper == nil {
		cfg.Sleeper = retry.SystemSleeper{}
	}
	cfg.Clock = clock.OrSystem(cfg.Clock)
	for i, h := range cfg.OnEvent {
		if h == nil {
			return nil, bad(fmt.Sprintf("OnEvent[%d]", i), "nil", "hook is nil")
		}
	}
	return &Controller{cfg: cfg, wake: make(chan struct{}, 1), wanted: map[string]bool{}}, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Controller {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Work is one step an agent wants to take.
type Work struct {
	// Dependency is the dependency key the step needs; "" for a step that needs none
	// (local reasoning, a cache), which is always admitted.
	Dependency string
	// Tool, RequestID and IdempotencyKey identify the step; the key goes with a replay.
	Tool           string
	RequestID      string
	IdempotencyKey string
	// Priority: below Config.MinQueuePriority the step is rejected while the
	// dependency is open. Defaults to 0, which is below every usual priority.
	Priority Priority
	// ReadOnly marks a step that only reads. Reads are never queued: by the time they
	// ran their answer would be stale.
	ReadOnly bool
	// NoProbe marks work that must never be a half-open probe (a mutation: see
	// breaker.Breaker.AllowNoProbe). Once the cooldown is over such work is not
	// admitted to probe: it is queued, or refused, as while the breaker is open.
	// Work on a breaker with a health probe attached (package probe) is treated so
	// too, whatever this says. Defaults to false.
	NoProbe bool
	// MaxWait is how long the step may wait for the dependency. Zero means it cannot
	// wait. A queued step expires MaxWait after it was queued.
	MaxWait time.Duration
	// ReplayPolicy says how a queued step is replayed. Defaults to ReplayAuto.
	ReplayPolicy ReplayPolicy
	// Payload is what the replay needs, such as the call's arguments. It is stored as
	// given.
	Payload []byte
}

// Admit decides about one piece of work. When the dependency is available (its breaker
// is closed, its cooldown is over so this call may be the probe, or it is half-open
// with a probe slot free) the work is admitted. When it is not (open, forced open, or
// half-open with every probe out, where the breaker would refuse the call): reads,
// low-priority work and work that cannot wait are rejected with a reason; work that
// may wait is queued durably, with an expiry, unless the expiry comes before the
// dependency can even be tried again.
func (c *Controller) Admit(ctx context.Context, w Work) (Decision, error) {
	d := Decision{Dependency: w.Dependency, Tool: w.Tool}
	if err := c.checkWork(&w); err != nil {
		return d, err
	}
	if w.Dependency == "" {
		d.Verdict, d.Reason = Admit, ReasonNoDependency
		return d, nil
	}
	b, ok := c.cfg.Map.Get(w.Dependency)
	if !ok {
		d.Verdict, d.Reason = Admit, ReasonUnguarded
		return d, nil
	}
	now := c.cfg.Clock.Now()
	state := b.State()
	d.BreakerState = state.String()
	wait := b.RetryAfter()
	if available(state, wait) && (state.Admits() || !w.NoProbe && !b.HasProber()) {
		d.Verdict, d.Reason = Admit, ReasonAvailable
		return d, nil
	}
	if wait > 0 && state == breaker.Open {
		// Half-open with every probe out: the wait is the probes' lease, the latest the
		// answer can come, not the earliest; the dependency may recover any moment, so
		// it sets no RecoverAt and never makes work expire "before recovery".
		d.RecoverAt = now.Add(wait)
	}
	d.Verdict = Reject
	switch {
	case w.ReadOnly:
		d.Reason = ReasonReadOnly
		return d, nil
	case w.Priority < c.cfg.MinQueuePriority:
		d.Reason = ReasonLowPriority
		return d, nil
	case w.MaxWait == 0:
		d.Reason = ReasonCannotWait
		return d, nil
	}
	d.QueuedUntil = now.Add(w.MaxWait)
	if !d.RecoverAt.IsZero() && !d.RecoverAt.Before(d.QueuedUntil) {
		d.Reason = ReasonExpiresFirst
		return d, nil
	}
	if w.IdempotencyKey != "" {
		if decided, err := c.decideRepeat(ctx, w.Dependency, w.IdempotencyKey, &d); decided || err != nil {
			return d, err
		}
	}
	err := c.enqueue(ctx, &w, &d, now)
	return d, err
}

// enqueue queues w in the journal until d.QueuedUntil and completes d: queued, or
// rejected when the queue is full. It reports the queued item to the listeners.
func (c *Controller) enqueue(ctx context.Context, w *Work, d *Decision, now time.Time) error {
	it, err := c.cfg.Journal.Enqueue(ctx, journal.QueueItem{
		Dependency: w.Dependency, Tool: w.Tool, RequestID: w.RequestID, IdempotencyKey: w.IdempotencyKey,
		Priority: int(w.Priority), CreatedAt: now, ExpiresAt: d.QueuedUntil, ReplayPolicy: string(w.ReplayPolicy),
		Payload: w.Payload,
	}, c.cfg.MaxQueued)
	if errors.Is(err, journal.ErrQueueFull) {
		d.Reason, d.MaxQueued = ReasonQueueFull, c.cfg.MaxQueued
		return nil
	}
	if err != nil {
		return err
	}
	d.Verdict, d.Reason, d.ItemID, d.QueuedUntil = Queue, ReasonQueued, it.ID, it.ExpiresAt
	c.emit(Event{Kind: EventQueued, Item: it, Reason: d.Message(nil), At: now})
	return nil
}

// checkWork returns a *ConfigError for the first invalid field of w, or for work that
// would need a Config.Replay the controller lacks. It sets w.ReplayPolicy's default.
func (c *Controller) checkWork(w *Work) error {
	if w.MaxWait < 0 {
		return &ConfigError{Package: "admission", Field: "Work.MaxWait", Value: w.MaxWait, Problem: "must not be negative"}
	}
	if w.ReplayPolicy == "" {
		w.ReplayPolicy = ReplayAuto
	}
	if w.ReplayPolicy != ReplayAuto && w.ReplayPolicy != ReplayHandOver {
		return &ConfigError{Package: "admission", Field: "Work.ReplayPolicy", Value: fmt.Sprintf("%q", w.ReplayPolicy), Problem: `must be "auto" or "hand_over"`}
	}
	if w.ReplayPolicy == ReplayAuto && c.cfg.Replay == nil && w.MaxWait > 0 {
		return &ConfigError{Package: "admission", Field: "Config.Replay", Value: "nil", Problem: "is required to queue work with ReplayAuto"}
	}
	return nil
}

// decideRepeat decides about work with idempotency key key that Admit would queue for
// dependency, when the journal already knows the key: an unsettled intent rejects it,
// and an item already waiting is the decision. It reports whether it decided, in d.
func (c *Controller) decideRepeat(ctx context.Context, dependency, key string, d *Decision) (bool, error) {
	// Never queue a repeat of an operation that may already have been applied.
	un, err := c.cfg.Journal.UnresolvedKey(ctx, key)
	if err != nil {
		return true, err
	}
	if len(un) > 0 {
		d.Reason = ReasonUnresolved
		return true, nil
	}
	// The same operation asked again while it waits (a model repeating a queued
	// call, which is never the probe): it is the item already queued, not a second
	// one that would replay the operation twice.
	waiting, err := c.cfg.Journal.Queued(ctx, dependency, 0, journal.QueueWaiting)
	if err != nil {
		return true, err
	}
	for _, it := range waiting {
		if it.IdempotencyKey == key {
			d.Verdict, d.Reason, d.ItemID, d.QueuedUntil = Queue, ReasonQueued, it.ID, it.ExpiresAt
			return true, nil
		}
	}
	return false, nil
}

// available reports whether a call may go to a dependency whose breaker is in state s
// with wait left before it lets the next call through (Breaker.RetryAfter): closed;
// open with its cooldown over, so that this call can be the probe (holding it back
// would leave the breaker open for ever, and its queue with it); or half-open with a
// probe slot free. Half-open with every probe out is not available: the breaker
// refuses the call, and work admitted then would be refused and lost instead of
// queued.
func available(s breaker.State, wait time.Duration) bool {
	switch s {
	case breaker.Closed, breaker.ForcedClosed:
		return true
	case breaker.Open, breaker.HalfOpen:
		return wait <= 0
	}
	return false
}

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// QueueStore is what the controller needs from the durable queue: *journal.Journal
// implements it. Each method must be safe for concurrent use.
type QueueStore interface {
	Enqueue(ctx context.Context, it journal.QueueItem, limit int) (journal.QueueItem, error)
	Queued(ctx context.Context, dependency string, limit int, states ...journal.QueueState) ([]journal.QueueItem, error)
	MoveQueued(ctx context.Context, id string, from, to journal.QueueState, reason string) (bool, error)
	ExpireQueued(ctx context.Context, dependency string, now time.Time) ([]journal.QueueItem, error)
	// ClaimQueued takes the next unexpired waiting item and marks it replaying, in one
	// commit.
	ClaimQueued(ctx context.Context, dependency string, now time.Time, reason string) (journal.QueueItem, bool, error)
	// QueuedDependencies lists the dependencies with items waiting.
	QueuedDependencies(ctx context.Context) ([]string, error)
	// UnresolvedKey returns the unsettled intents that carry an idempotency key: an
	// item whose key has any is not replayed automatically.
	UnresolvedKey(ctx context.Context, key string) ([]journal.Intent, error)
}

var _ QueueStore = (*journal.Journal)(nil)
