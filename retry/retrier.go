package retry

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/redact"
)

// Config configures a Retrier.
type Config struct {
	// Policy is the default policy of every operation; an Operation's Policy overrides
	// it field by field. Zero fields take the defaults listed on Policy.
	Policy Policy
	// Budgets holds the per-dependency retry budgets. Give every Retrier of a process
	// the same Budgets so that all callers of a dependency share one budget. Defaults
	// to a registry of its own with the BudgetConfig defaults and Clock.
	Budgets *Budgets
	// Clock is the time source for deadlines, budgets and records. Defaults to the
	// system clock.
	Clock clock.Clock
	// Sleeper waits between attempts in Do. Defaults to SystemSleeper; tests use
	// FakeSleeper.
	Sleeper Sleeper
	// Rand returns a uniform value in [0, 1) for backoff jitter. It must be safe for
	// concurrent use. Defaults to math/rand/v2.Float64.
	Rand func() float64
	// Journal, when set, makes the intent of each attempt of an operation not declared
	// Idempotent durable before it is sent, and records its outcome; an idempotent
	// operation's attempts are safe to repeat and write nothing, unless JournalAll is
	// set. Defaults to none.
	Journal Journal
	// JournalAll records the attempts of idempotent operations in Journal too, as an
	// audit trail of every call (one write per attempt more). Defaults to false.
	JournalAll bool
	// Logger, when set, receives one record per attempt. Defaults to none.
	Logger *slog.Logger
	// Redactor decides what of an attempt's error text the Logger and the OnAttempt
	// hooks see: the error is often the dependency's answer. Records carry an "error"
	// group with its length and hash (and an excerpt only if the Redactor adds one);
	// Event.Err is wrapped (redact.Redactor.Wrap) so that printing it prints the same,
	// while errors.Is and errors.As still reach the error. Defaults to redact.Default:
	// fingerprints only.
	Redactor *redact.Redactor
	// OnAttempt hooks receive one Event per attempt (and per refused attempt), in order,
	// with the caller's context (for traces), on the goroutine that made it, outside any
	// lock. Keep them quick. Defaults to none.
	OnAttempt []func(context.Context, Event)
	// MaxOperationsPerInvocation caps the operations Track keeps for one invocation.
	// Defaults to 1000.
	MaxOperationsPerInvocation int
	// MaxInvocations caps the invocations Track keeps at once; Forget frees them.
	// Defaults to 100000.
	MaxInvocations int
}

// Retrier runs logical operations under a budget: a maximum number of attempts and a
// deadline, the breaker's verdict before every attempt, full-jitter backoff with the
// server's stated delay as a floor, a retry budget shared per dependency, and the rule
// that an UNKNOWN outcome is never retried unless the operation is idempotent or was
// proved not applied. It is safe for concurrent use.
type Retrier struct {
	cfg     Config
	clk     clock.Clock
	sleeper Sleeper
	rand    func() float64
	budgets *Budgets
	path    *callpath.Path // the operations' breakers (Operation.Breaker)

	trackMu sync.Mutex
	tracked map[string]map[Key]*Run

	// added are the hooks attached after New (internal/attach, for the telemetry's
	// Wire), called after Config.OnAttempt's.
	added atomic.Pointer[[]func(context.Context, Event)]
}

// New returns a Retrier, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Retrier, error) {
	cfg.Policy = cfg.Policy.WithDefaults()
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	for i, h := range cfg.OnAttempt {
		if h == nil {
			return nil, &ConfigError{Package: "retry", Field: fmt.Sprintf("OnAttempt[%d]", i), Value: "nil", Problem: "hook is nil"}
		}
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default
	}
	if cfg.MaxOperationsPerInvocation == 0 {
		cfg.MaxOperationsPerInvocation = 1000
	}
	if cfg.MaxInvocations == 0 {
		cfg.MaxInvocations = 100000
	}
	if cfg.MaxOperationsPerInvocation < 0 {
		return nil, &ConfigError{Package: "retry", Field: "MaxOperationsPerInvocation", Value: cfg.MaxOperationsPerInvocation, Problem: "must be positive"}
	}
	if cfg.MaxInvocations < 0 {
		return nil, &ConfigError{Package: "retry", Field: "MaxInvocations", Value: cfg.MaxInvocations, Problem: "must be positive"}
	}
	r := &Retrier{
		cfg:     cfg,
		clk:     clock.OrSystem(cfg.Clock),
		sleeper: cfg.Sleeper,
		rand:    cfg.Rand,
		budgets: cfg.Budgets,
		tracked: map[string]map[Key]*Run{},
		path:    callpath.New(callpath.Nanos(cfg.Clock), nil),
	}
	if r.sleeper == nil {
		r.sleeper = SystemSleeper{}
	}
	if r.rand == nil {
		r.rand = rand.Float64
	}
	if r.budgets == nil {
		b, err := NewBudgets(BudgetConfig{Clock: cfg.Clock})
		if err != nil {
			return nil, err
		}
		r.budgets = b
	}
	return r, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Retrier {
	r, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// Policy returns the Retrier's policy, defaults filled in.
func (r *Retrier) Policy() Policy { return r.cfg.Policy }

// Budgets returns the registry of retry budgets the Retrier draws on.
func (r *Retrier) Budgets() *Budgets { return r.budgets }

// Operation describes one logical operation.
type Operation struct {
	// Dependency is the dependency key; retry budgets are kept per dependency. Required.
	Dependency string
	// Tool names the tool or endpoint, for records and the journal. Defaults to "".
	Tool string
	// Args are the call's arguments. They are hashed into Key and the journal's
	// args_hash; the journal keeps them only when told to. Defaults to none.
	Args map[string]any
	// Key identifies the logical operation within an invocation. Defaults to
	// OperationKey(Tool, Args).
	Key Key
	// RequestID names the operation in records and the journal. Defaults to a random ID.
	RequestID string
	// IdempotencyKey is carried by every attempt's context. Defaults to a new random key.
	IdempotencyKey string
	// Breaker, when set, is asked before every attempt and told every outcome. Leave it
	// nil when a lower layer (the httptransport package, a tool callback) already holds
	// the breaker, or each call would be counted twice and a half-open probe would
	// refuse itself. Defaults to none.
	Breaker *breaker.Breaker
	// Idempotent declares that repeating the operation is harmless, which lets it be
	// retried after an UNKNOWN outcome. Defaults to false.
	Idempotent bool
	// Mutating declares that the operation changes something (a payment, an email, a
	// write): its attempts are admitted with Breaker.AllowNoProbe, so none of them is
	// ever the probe of a half-open Breaker; they are refused (ReasonBreakerOpen) until
	// a read-only call or the dependency's prober has closed it. Independent of
	// Idempotent: an idempotent write is still a poor probe. Defaults to false.
	Mutating bool
	// Reconcile asks whether an UNKNOWN attempt was applied; when it answers NotApplied
	// the operation may be retried. Defaults to none, and a non-idempotent operation
	// then ends at its first UNKNOWN outcome.
	Reconcile Reconciler
	// Policy overrides the Retrier's policy field by field.
	Policy Policy
}

// Start begins a logical operation without making an attempt; drive it with
// Run.Admit and Attempt.Finish. Do is the same loop for a caller that owns it.
func (r *Retrier) Start(op Operation) (*Run, error) {
	pol := merge(r.cfg.Policy, op.Policy)
	if err := pol.validate("Operation.Policy."); err != nil {
		return nil, err
	}
	if op.Dependency == "" {
		return nil, &ConfigError{Package: "retry", Field: "Operation.Dependency", Value: `""`, Problem: "is required"}
	}
	budget, err := r.budgets.For(op.Dependency)
	if err != nil {
		return nil, err
	}
	hash, err := ArgsHash(op.Args)
	if err != nil {
		return nil, &ConfigError{Package: "retry", Field: "Operation.Args", Value: fmt.Sprintf("%d argument(s) of tool %q", len(op.Args), op.Tool), Problem: err.Error()}
	}
	if op.Key == "" {
		op.Key = keyOf(op.Tool, hash)
	}
	if op.RequestID == "" {
		op.RequestID = "op-" + crand.Text()
	}
	if op.IdempotencyKey == "" {
		op.IdempotencyKey = NewIdempotencyKey()
	}
	if pol.Version == "" && op.Breaker != nil {
		pol.Version = op.Breaker.Policy().Version
	}
	now := r.clk.Now()
	return &Run{
		r:        r,
		op:       op,
		pol:      pol,
		hash:     hash,
		budget:   budget,
		started:  now,
		deadline: now.Add(pol.Deadline),
	}, nil
}

// Do runs a logical operation to its end: it admits each attempt, calls f, and sleeps
// the backoff between attempts through the Sleeper. It never panics on bad input: an
// invalid Operation ends with ReasonInvalidOperation and the error in Result.Err.
func (r *Retrier) Do(ctx context.Context, op Operation, f Func) Result {
	run, err := r.Start(op)
	if err != nil {
		return Result{
			Outcome: classify.FailedBeforeSend, Reason: ReasonInvalidOperation, Err: err,
			RequestID: op.RequestID, IdempotencyKey: op.IdempotencyKey,
		}
	}
	for {
		a, err := run.Admit(ctx)
		if err != nil {
			if se, ok := err.(*StopError); ok && se.Reason == ReasonCanceled {
				run.abandon(ReasonCanceled, se.Err)
			}
			return run.Result()
		}
		c, ferr := f(a.Context(), a.Info())
		d := a.Finish(ctx, c, ferr)
		if !d.Retry {
			return run.Result()
		}
		if err := r.sleeper.Sleep(ctx, d.Delay); err != nil {
			run.abandon(ReasonCanceled, err)
			return run.Result()
		}
	}
}
