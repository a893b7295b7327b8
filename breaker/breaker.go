package breaker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// Config configures one Breaker.
type Config struct {
	// Name identifies the breaker in events, errors and metrics: the dependency key.
	// Required.
	Name string
	// Policy holds the trip, cooldown and probe settings. Zero fields take defaults.
	Policy Policy
	// Clock is the time source. Defaults to the system clock, read through a coarse
	// (about 1ms) monotonic cache so the hot path never calls into the OS clock.
	Clock clock.Clock
	// Rand returns a uniform value in [0, 1) for cooldown jitter. It is called with the
	// breaker's lock held and need not be safe for concurrent use. Defaults to
	// math/rand/v2.Float64.
	Rand func() float64
	// OnStateChange listeners receive every transition, in order, outside any lock of the
	// breaker and never two at a time for one breaker; a listener may read or operate the
	// breaker. The goroutine that caused a transition delivers it, so keep listeners quick
	// (hand slow work to a queue). Defaults to none.
	OnStateChange []func(Event)
}

// Breaker is a circuit breaker for one dependency. It is safe for concurrent use.
//
// Calls go through two steps: [Breaker.Allow] hands out a [Permit] or rejects with an
// [*OpenError]; the permit then reports the call's outcome once. In the closed state
// both steps are lock-free and allocate nothing.
type Breaker struct {
	// Read by every call. Written only on transitions and bucket rotation.
	// stateGen is generation<<genShift | timedBit (when slow calls are tracked) | State.
	// A plain word read with sync/atomic functions rather than an atomic.Uint64: the
	// method call of the typed atomic pushes Allow just past the inliner's budget.
	stateGen  uint64
	bucketEnd atomic.Int64 // closed: when the current bucket ends
	reopenAt  atomic.Int64 // open: when the next probe may go
	openSpan  atomic.Int64 // open: the wait that was set, to survive a clock jumping back
	probeBusy atomic.Int64 // half-open: reject until then (every probe slot is taken)
	rejectErr atomic.Pointer[OpenError]
	slowNanos int64 // SlowCallThreshold in nanoseconds; 0 = off
	clk       clock.Clock
	epoch     time.Time // nanosecond readings count from here

	stripes stripes // this breaker's success counters in the shared arena

	name      string
	policy    Policy
	rateMicro int64 // FailureRateThreshold in parts per million, for exact integer compares
	slowMicro int64
	rand      func() float64
	listeners []func(Event)

	mu           sync.Mutex // guards the fields below
	win          window
	openedAt     int64
	everOpened   bool // openedAt is set (0 is a valid instant: the epoch)
	failedProbes int  // consecutive failed probes since the breaker last closed
	admitted     int  // probes handed out this half-open period and not given back
	succeeded    int  // probes that succeeded this half-open period
	leases       []lease
	nextToken    uint64
	expired      int64 // probe leases that ran out, over the breaker's life
	pending      []Event
	delivering   bool
}

type lease struct {
	token    uint64 // 0 = free slot
	deadline int64
}

// New returns a breaker, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Breaker, error) {
	if cfg.Name == "" {
		return nil, &ConfigError{Package: "breaker", Field: "Name", Value: `""`, Problem: "is required"}
	}
	p := cfg.Policy.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for i, l := range cfg.OnStateChange {
		if l == nil {
			return nil, &ConfigError{Package: "breaker", Field: fmt.Sprintf("OnStateChange[%d]", i), Value: "nil", Problem: "listener is nil"}
		}
	}
	b := &Breaker{
		name:      cfg.Name,
		policy:    p,
		clk:       cfg.Clock,
		rand:      cfg.Rand,
		listeners: cfg.OnStateChange,
		rateMicro: int64(math.Round(p.FailureRateThreshold * 1e6)),
		slowMicro: int64(math.Round(p.SlowCallRateThreshold * 1e6)),
		slowNanos: int64(p.SlowCallThreshold),
		leases:    make([]lease, p.HalfOpenProbes),
	}
	if b.rand == nil {
		b.rand = rand.Float64
	}
	b.stripes = allocStripes()
	runtime.AddCleanup(b, releaseStripes, b.stripes)
	if b.clk == nil {
		b.epoch = clock.CoarseBase()
	} else {
		b.epoch = b.clk.Now()
	}
	now := b.nanos()
	b.win = newWindow(p, now)
	b.win.reset(now, b.stripes) // a reused arena column may hold old counts
	b.bucketEnd.Store(b.win.end())
	if b.slowNanos > 0 {
		b.storeSG(timedBit | uint64(Closed))
	} else {
		b.storeSG(uint64(Closed))
	}
	return b, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Breaker {
	b, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

func (b *Breaker) loadSG() uint64   { return atomic.LoadUint64(&b.stateGen) }
func (b *Breaker) storeSG(v uint64) { atomic.StoreUint64(&b.stateGen, v) }

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// Policy returns the policy in force, defaults applied.
func (b *Breaker) Policy() Policy { return b.policy }

// State returns the current state.
func (b *Breaker) State() State { return State(b.loadSG() & stateMask) }

// nanos reads the breaker's clock as nanoseconds since its epoch.
func (b *Breaker) nanos() int64 {
	if b.clk == nil {
		return clock.CoarseNanos()
	}
	return b.clockNanos()
}

func (b *Breaker) clockNanos() int64 { return int64(b.clk.Now().Sub(b.epoch)) }

func (b *Breaker) toNanos(t time.Time) int64  { return int64(t.Sub(b.epoch)) }
func (b *Breaker) toTime(n int64) time.Time   { return b.epoch.Add(time.Duration(n)) }
func (b *Breaker) now() time.Time             { return b.toTime(b.nanos()) }
func (b *Breaker) rejectWith(e *OpenError)    { b.rejectErr.Store(e) }
func (b *Breaker) rejection() (Permit, error) { return Permit{}, b.rejectErr.Load() }
func (b *Breaker) newOpenError(s State, until int64) *OpenError {
	e := &OpenError{Breaker: b.name, State: s, now: b.now}
	if until != 0 {
		e.Until = b.toTime(until)
	}
	return e
}

// Allow asks to make one call. It returns a permit that must report the call's outcome,
// or an *OpenError (unwrapping to ErrOpen) when the call must not be made.
func (b *Breaker) Allow() (p Permit, err error) {
	// Kept small enough to inline: the closed, untimed case is one atomic load.
	p.b, p.sg = b, atomic.LoadUint64(&b.stateGen) // not loadSG: that costs inlining budget
	if p.sg&slowPathBits != 0 {
		err = p.allowTimed()
	}
	return
}

// allowTimed is Allow when the call's start time matters or the breaker is not closed.
func (p *Permit) allowTimed() (err error) {
	b := p.b
	now := b.nanos()
	sg := b.loadSG()
	if State(sg & stateMask).Admits() {
		*p = Permit{b: b, sg: sg, n: now}
		return nil
	}
	*p, err = b.allowSlow(sg, now)
	return err
}

// AllowAt is Allow with the time given by the caller.
func (b *Breaker) AllowAt(now time.Time) (Permit, error) {
	n := b.toNanos(now)
	sg := b.loadSG()
	if State(sg & stateMask).Admits() {
		return Permit{b: b, sg: sg, n: n}, nil
	}
	return b.allowSlow(sg, n)
}

func (b *Breaker) allowSlow(sg uint64, now int64) (Permit, error) {
	switch State(sg & stateMask) {
	case Open:
		if wait := b.reopenAt.Load() - now; wait > 0 && wait <= b.openSpan.Load() {
			return b.rejection()
		}
	case HalfOpen:
		if now < b.probeBusy.Load() {
			return b.rejection()
		}
	case ForcedOpen:
		return b.rejection()
	}
	return b.acquire(now)
}

// acquire runs under the lock when the fast path could not decide: the cooldown may have
// ended, a probe slot may be free, or the state changed under us.
func (b *Breaker) acquire(now int64) (Permit, error) {
	b.mu.Lock()
	sg := b.loadSG()
	switch State(sg & stateMask) {
	case Closed, ForcedClosed:
		b.mu.Unlock()
		return Permit{b: b, sg: sg, n: now}, nil
	case ForcedOpen:
		b.mu.Unlock()
		return b.rejection()
	case Open:
		reopen := b.reopenAt.Load()
		if span := b.openSpan.Load(); reopen-now > span {
			// The clock went backwards: never wait longer than the cooldown that was set.
			reopen = now + span
			b.reopenAt.Store(reopen)
			b.rejectWith(b.newOpenError(Open, reopen))
		}
		if now < reopen {
			b.mu.Unlock()
			return b.rejection()
		}
		b.transition(now, HalfOpen, CauseCooldownElapsed, "cooldown elapsed; letting a probe through")
		sg = b.loadSG()
	}
	// Half-open: hand out a probe lease if a slot is free.
	b.expireLeases(now)
	if b.admitted >= len(b.leases) {
		b.mu.Unlock()
		b.deliver()
		return b.rejection()
	}
	b.nextToken++
	token := b.nextToken
	for i := range b.leases {
		if b.leases[i].token == 0 {
			b.leases[i] = lease{token: token, deadline: now + int64(b.policy.ProbeLease)}
			break
		}
	}
	b.admitted++
	b.updateProbeBusy()
	b.mu.Unlock()
	b.deliver()
	return Permit{b: b, sg: sg, n: int64(token)}, nil
}

// expireLeases frees the slots of probes that did not report in time.
func (b *Breaker) expireLeases(now int64) {
	for i := range b.leases {
		if l := &b.leases[i]; l.token != 0 && now >= l.deadline {
			*l = lease{}
			b.admitted--
			b.expired++
		}
	}
	b.updateProbeBusy()
}

// updateProbeBusy publishes until when the fast path may reject half-open calls:
// while every slot is taken, until the earliest lease runs out.
func (b *Breaker) updateProbeBusy() {
	if b.admitted < len(b.leases) {
		b.probeBusy.Store(math.MinInt64)
		return
	}
	earliest := int64(math.MaxInt64)
	for _, l := range b.leases {
		if l.token != 0 && l.deadline < earliest {
			earliest = l.deadline
		}
	}
	if earliest == math.MaxInt64 {
		earliest = math.MinInt64
	}
	b.probeBusy.Store(earliest)
	if cur := b.rejectErr.Load(); cur == nil || cur.State != HalfOpen || b.toNanos(cur.Until) != earliest {
		b.rejectWith(b.newOpenError(HalfOpen, earliest))
	}
}

// cooldown returns the jittered open period after failedProbes consecutive failed probes,
// floored by a server-stated delay.
func (b *Breaker) cooldown(retryAfter time.Duration) (wait time.Duration, floored bool) {
	p := &b.policy
	c := float64(p.Cooldown) * math.Pow(p.CooldownMultiplier, float64(b.failedProbes))
	c = min(c, float64(p.MaxCooldown))
	if p.Jitter > 0 {
		c *= 1 + p.Jitter*b.rand()
	}
	wait = time.Duration(c)
	if ra := min(retryAfter, p.MaxRetryAfter); ra > wait {
		return ra, true
	}
	return wait, false
}

// open moves the breaker to Open (from closed or half-open) with a fresh cooldown.
func (b *Breaker) open(now int64, cause Cause, reason string, retryAfter time.Duration) {
	wait, floored := b.cooldown(retryAfter)
	if floored {
		reason += fmt.Sprintf("; retry-after %s", wait)
	}
	b.openedAt, b.everOpened = now, true
	b.reopenAt.Store(now + int64(wait))
	b.openSpan.Store(int64(wait))
	b.rejectWith(b.newOpenError(Open, now+int64(wait)))
	b.transition(now, Open, cause, reason)
}

// extendOpen applies a server-stated delay to an open breaker: the reopen time only moves later.
func (b *Breaker) extendOpen(now int64, retryAfter time.Duration) {
	ra := min(retryAfter, b.policy.MaxRetryAfter)
	if until := now + int64(ra); until > b.reopenAt.Load() {
		b.reopenAt.Store(until)
		b.openSpan.Store(max(b.openSpan.Load(), int64(ra)))
		b.rejectWith(b.newOpenError(Open, until))
		b.emit(now, Open, Open, CauseRetryAfter, fmt.Sprintf("retry-after %s", ra))
	}
}

// transition changes state under the lock, starts a new generation (so reports from
// permits of the old one are dropped) and queues the event.
func (b *Breaker) transition(now int64, to State, cause Cause, reason string) {
	old := b.loadSG()
	from := State(old & stateMask)
	switch to {
	case Closed, ForcedClosed:
		b.win.reset(now, b.stripes)
		b.bucketEnd.Store(b.win.end())
		b.failedProbes = 0
	case HalfOpen:
		clear(b.leases)
		b.admitted, b.succeeded = 0, 0
		b.updateProbeBusy()
	case ForcedOpen:
		b.rejectWith(b.newOpenError(ForcedOpen, 0))
	}
	b.storeSG((old>>genShift+1)<<genShift | old&timedBit | uint64(to))
	b.emit(now, from, to, cause, reason)
}

// ForceOpen rejects every call until Reset or ForceClosed. reason is kept in the event.
func (b *Breaker) ForceOpen(reason string) { b.operate(ForcedOpen, "forced open by operator", reason) }

// ForceClosed lets every call through and keeps measuring, but never trips, until Reset
// or ForceOpen: the breaker is switched off without losing its numbers.
func (b *Breaker) ForceClosed(reason string) {
	b.operate(ForcedClosed, "forced closed by operator", reason)
}

// Reset closes the breaker with an empty window and the cooldown growth forgotten.
func (b *Breaker) Reset(reason string) { b.operate(Closed, "reset by operator", reason) }

func (b *Breaker) operate(to State, what, reason string) {
	if reason != "" {
		what += ": " + reason
	}
	b.mu.Lock()
	b.transition(b.nanos(), to, CauseOperator, what)
	b.mu.Unlock()
	b.deliver()
}
