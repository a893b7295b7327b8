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
	// Clock is the time source. Defaults to the system's monotonic clock: the lock-free
	// paths read its coarse cache (package clock), so a healthy call never calls into the
	// OS clock, and every decision taken under the lock, and every timed call, reads it
	// precisely. [clock.System] is the same as nil.
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
	// Read by every call. Written only on transitions and when the window slides.
	// stateGen is generation<<genShift | timedBit (when slow calls are tracked) | State.
	// A plain word read with sync/atomic functions rather than an atomic.Uint64: the
	// method call of the typed atomic pushes Allow just past the inliner's budget.
	stateGen uint64
	// bucketEnd is, while admitting, the first instant a success must take the lock:
	// the end of the current bucket (never, for a count window), or MinInt64 while a
	// success could trip the breaker, so that the gates are evaluated for it.
	bucketEnd atomic.Int64
	reopenAt  atomic.Int64 // open: when the next probe may go
	openSpan  atomic.Int64 // open: the wait that was set, to survive a clock jumping back
	probeBusy atomic.Int64 // half-open: reject until then (every probe slot is taken)
	rejectErr atomic.Pointer[OpenError]
	clk       clock.Clock
	epoch     time.Time // nanosecond readings count from here

	stripes stripes // this breaker's success counters in the shared arena

	name string
	// pol is the policy in force: replaced whole by SetPolicy, read without the lock by
	// Shadow and the lock-free rejections, and under it by every decision.
	pol       atomic.Pointer[Policy]
	rand      func() float64
	listeners []func(Event)

	mu       sync.Mutex // guards the fields below
	win      window
	openedAt int64
	// The four bools and five 32-bit counters sit together in 24 bytes: with them,
	// the struct is 512 bytes, the largest size class the allocator serves without an
	// 8-byte header (a pointerful object above 512 bytes gets one, which put a
	// 576-byte breaker in the 640-byte class). TestBreakerFitsInOneKiB measures it.
	everOpened    bool   // openedAt is set (0 is a valid instant: the epoch)
	hasNotBefore  bool   // notBefore is set; cleared when the breaker closes
	delivering    bool   // a goroutine is delivering pending events
	emitHealth    bool   // the transition being made is a health probe's (Event.HealthProbe)
	failedProbes  int32  // consecutive failed probes since the breaker last closed
	admitted      int32  // probes handed out this half-open period and not given back
	succeeded     int32  // probes that succeeded this half-open period
	expired       uint32 // probe leases that ran out, over the breaker's life
	nextToken     uint32 // the last lease token handed out; never 0 (a free slot)
	notBefore     int64  // latest instant a dependency asked not to be called before
	notBeforeSpan int64  // the delay that set notBefore, to survive a clock jumping back
	leases        []lease
	pending       []Event
	fleet         *fleetLink // set while attached to a fleet (package fleet); see fleet.go

	// prober is set while a prober is attached (see probe.go); nil = user calls may
	// probe. Read without the lock, off the closed path; kept last so that the fields
	// the closed path reads keep their offsets. One pointer, not two words: the struct
	// stays in its size class.
	prober atomic.Pointer[proberLink]
}

type lease struct {
	token    uint64 // 0 = free slot
	start    int64  // when the probe was admitted
	deadline int64
}

// New returns a breaker, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Breaker, error) {
	if cfg.Name == "" {
		return nil, &ConfigError{Package: "breaker", Field: "Name", Value: cfg.Name, Problem: "is required"}
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
	if clock.IsSystem(cfg.Clock) {
		// The same time, read the way the default reads it: a model's breakers get the
		// system clock from modelfailover, and their rejections should not each call
		// time.Now.
		cfg.Clock = nil
	}
	b := &Breaker{
		name:      cfg.Name,
		clk:       cfg.Clock,
		rand:      cfg.Rand,
		listeners: cfg.OnStateChange,
		leases:    make([]lease, p.HalfOpenProbes),
	}
	if b.rand == nil {
		b.rand = rand.Float64
	}
	b.pol.Store(&p)
	b.stripes = allocStripes()
	runtime.AddCleanup(b, releaseStripes, b.stripes)
	if b.clk == nil {
		b.epoch = clock.CoarseBase()
	} else {
		b.epoch = b.clk.Now()
	}
	now := b.preciseNanos()
	b.win = newWindow(p, now)
	b.stripes.take(0) // a reused arena column may hold old counts; generation 0 has tag 0
	b.bucketEnd.Store(b.win.end())
	if b.slowNanos() > 0 {
		b.storeSG(timedBit | uint64(Closed))
	} else {
		b.storeSG(uint64(Closed))
	}
	return b, nil
}

// slowNanos is SlowCallThreshold in nanoseconds; 0 = off. Read from the policy
// rather than kept in a field of its own (see the counters in Breaker).
func (b *Breaker) slowNanos() int64 { return max(0, int64(b.pol.Load().SlowCallThreshold)) }

// minCalls is MinimumCalls, at most WindowCalls for a count window.
func (b *Breaker) minCalls() int64 {
	p := b.pol.Load()
	if p.WindowCalls > 0 {
		return int64(min(p.MinimumCalls, p.WindowCalls))
	}
	return int64(p.MinimumCalls)
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

// tagOf is the stripe tag of a state word's generation.
func tagOf(sg uint64) uint64 { return sg >> genShift & tagMask }

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// Policy returns the policy in force, defaults applied.
func (b *Breaker) Policy() Policy { return *b.pol.Load() }

// State returns the current state.
func (b *Breaker) State() State { return State(b.loadSG() & stateMask) }

// nanos reads the breaker's clock as nanoseconds since its epoch: the coarse clock by
// default. Only the lock-free fast paths use it.
func (b *Breaker) nanos() int64 {
	if b.clk == nil {
		return clock.CoarseNanos()
	}
	return b.clockNanos()
}

// preciseNanos is nanos read precisely: everything that decides something from the
// time under the lock, and timed calls, use it.
func (b *Breaker) preciseNanos() int64 {
	if b.clk == nil {
		return clock.PreciseNanos()
	}
	return b.clockNanos()
}

func (b *Breaker) clockNanos() int64 { return int64(b.clk.Now().Sub(b.epoch)) }

func (b *Breaker) toNanos(t time.Time) int64  { return int64(t.Sub(b.epoch)) }
func (b *Breaker) toTime(n int64) time.Time   { return b.epoch.Add(time.Duration(n)) }
func (b *Breaker) now() time.Time             { return b.toTime(b.preciseNanos()) }
func (b *Breaker) rejectWith(e *OpenError)    { b.rejectErr.Store(e) }
func (b *Breaker) rejection() (Permit, error) { return Permit{}, b.rejectErr.Load() }
func (b *Breaker) newOpenError(s State, until, span int64) *OpenError {
	e := &OpenError{Breaker: b.name, State: s, now: b.now, span: time.Duration(span)}
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
	sg := b.loadSG()
	if State(sg & stateMask).Admits() {
		// A timed call: its start is read precisely, so a coarse clock that fell behind
		// cannot make it look slow or fast.
		*p = Permit{b: b, sg: sg, n: b.preciseNanos()}
		return nil
	}
	// A rejection, the whole of an outage's traffic, is decided here rather than in
	// allowSlow: one call less, and no Permit returned through two frames.
	var now int64
	if b.clk == nil {
		now = clock.CoarseNanos() // b.nanos, written out to be inlined
	} else {
		now = b.clockNanos()
	}
	hook(hookRejectAfterLoad)
	if b.busy(sg, now) {
		// countRejection, written out: as a call (too large to inline) it cost 1.4 ns
		// of the 5.6 an open rejection takes.
		if b.clk == nil && cheaprand()%rejectionSample == 0 {
			b.sampledRejection(sg)
		}
		*p = Permit{}
		return b.rejectErr.Load()
	}
	*p, err = b.decide(sg, now, true, allowUser)
	return err
}

// AllowAt is Allow with the time given by the caller (a replay of recorded calls).
func (b *Breaker) AllowAt(now time.Time) (Permit, error) {
	n := b.toNanos(now)
	sg := b.loadSG()
	if State(sg & stateMask).Admits() {
		return Permit{b: b, sg: sg, n: n}, nil
	}
	return b.allowSlow(sg, n, false, allowUser)
}

// allowKind says who asks, which decides whether the call may become a probe.
type allowKind uint8

const (
	allowUser    allowKind = iota // a user call: may probe, unless a prober is attached
	allowNoProbe                  // a call that must never be a probe (a mutation)
	allowProber                   // the attached prober's own health check
)

// allowSlow rejects without a lock while the state says so; otherwise it decides under
// the lock, re-reading the clock precisely when refresh is set.
func (b *Breaker) allowSlow(sg uint64, now int64, refresh bool, kind allowKind) (Permit, error) {
	hook(hookRejectAfterLoad)
	if b.busy(sg, now) {
		b.countRejection(sg)
		return b.rejection()
	}
	return b.decide(sg, now, refresh, kind)
}

// busy reports whether a call can be rejected without the lock: the open period has
// not ended, every probe slot is taken, or an operator forced the breaker open.
//
// A wait longer than its full span means an injected clock went backwards: the lock
// clamps it. The default clock is monotonic, and its coarse readings may lag the
// precise reading a deadline was set from, so the span is not checked for it.
func (b *Breaker) busy(sg uint64, now int64) bool {
	switch State(sg & stateMask) {
	case Open:
		wait := b.reopenAt.Load() - now
		return wait > 0 && (b.clk == nil || wait <= b.openSpan.Load())
	case HalfOpen:
		// Compared before subtracting: the "no probe busy" sentinel is MinInt64.
		pb := b.probeBusy.Load()
		return pb > now && (b.clk == nil || pb-now <= int64(b.pol.Load().ProbeLease))
	}
	return State(sg&stateMask) == ForcedOpen
}

// decide is allowSlow past the lock-free rejections: the call would end the open period
// or take a free probe slot, or the state changed under the caller.
func (b *Breaker) decide(sg uint64, now int64, refresh bool, kind allowKind) (Permit, error) {
	// Only a call that may probe goes on. Checked here, after the lock-free
	// rejections, so neither the closed path nor the busy rejections pay for it.
	if st := State(sg & stateMask); (st == Open || st == HalfOpen) && kind != allowProber &&
		(kind == allowNoProbe || b.proberActive(now)) {
		b.countRejection(sg)
		return b.noProbeRejection(st, now)
	}
	if refresh {
		now = b.preciseNanos()
	}
	return b.acquire(now, kind)
}

// countRejection keeps the coarse clock fresh while callers are being rejected: every
// clock.RefreshEvery rejections on a stripe (on average: one in rejectionSample is
// counted, for rejectionSample) read the clock precisely, so an open period ends on
// time even when the clock's ticker cannot get a CPU.
func (b *Breaker) countRejection(sg uint64) {
	if b.clk == nil && cheaprand()%rejectionSample == 0 {
		b.sampledRejection(sg)
	}
}

// sampledRejection is countRejection's write, for the one rejection in rejectionSample
// that makes it, of a rejection decided on the state word sg.
func (b *Breaker) sampledRejection(sg uint64) {
	if b.stripes.bump(tagOf(sg), rejectionSample)%clock.RefreshEvery == 0 {
		refreshClock()
	}
}

// refreshes counts the hot paths' refreshes of the coarse clock, for tests.
var refreshes atomic.Int64

// refreshClock publishes a precise reading to the coarse clock.
func refreshClock() {
	refreshes.Add(1)
	clock.PreciseNanos()
}

// acquire runs under the lock when the fast path could not decide: the cooldown may have
// ended, a probe slot may be free, or the state changed under us.
func (b *Breaker) acquire(now int64, kind allowKind) (Permit, error) {
	b.mu.Lock()
	b.clamp(now)
	sg := b.loadSG()
	switch State(sg & stateMask) {
	case Closed, ForcedClosed:
		b.mu.Unlock()
		return Permit{b: b, sg: sg, n: now}, nil
	case ForcedOpen:
		b.mu.Unlock()
		return b.rejection()
	}
	if kind != allowProber && (kind == allowNoProbe || b.proberActive(now)) {
		// A call that may not probe (or a prober attached while it waited for the
		// lock): it neither ends the open period nor takes a slot.
		st := State(sg & stateMask)
		b.mu.Unlock()
		return b.noProbeRejection(st, now)
	}
	if State(sg&stateMask) == Open {
		if now < b.reopenAt.Load() || b.fleetDefers(now) {
			b.mu.Unlock()
			return b.rejection()
		}
		if kind == allowProber {
			b.emitHealth = true
			b.transition(now, HalfOpen, CauseCooldownElapsed, "probe interval elapsed; running the health probe")
			b.emitHealth = false
		} else {
			b.transition(now, HalfOpen, CauseCooldownElapsed, "cooldown elapsed; letting a probe through")
		}
		sg = b.loadSG()
	}
	// Half-open: hand out a probe lease if a slot is free.
	b.expireLeases(now)
	if int(b.admitted) >= len(b.leases) || !b.fleetProbeOK(now) {
		b.mu.Unlock()
		b.deliver()
		return b.rejection()
	}
	b.nextToken++
	if b.nextToken == 0 { // wrapped, after 4 billion probes: 0 marks a free slot
		b.nextToken = 1
	}
	token := uint64(b.nextToken) &^ healthToken
	if kind == allowProber {
		token |= healthToken // the lease remembers whose probe it is: see reportProbe
	}
	for i := range b.leases {
		if b.leases[i].token == 0 {
			b.leases[i] = lease{token: token, start: now, deadline: now + int64(b.pol.Load().ProbeLease)}
			break
		}
	}
	b.admitted++
	b.updateProbeBusy()
	b.mu.Unlock()
	b.deliver()
	return Permit{b: b, sg: sg, n: int64(token)}, nil
}

// clamp pulls every deadline derived from the clock back to at most its full span from
// now, under the lock. It matters after the clock jumped backwards: a reopen time is
// never more than the open period that was set away, a probe lease never more than
// ProbeLease, a server-stated delay never more than the delay that was stated. The
// first reading after a jump anchors the clamped deadline, so Allow, RetryAfter and
// snapshots agree.
// The default clock is monotonic and never jumps: nothing to clamp, and a reading taken
// before waiting for the lock must not shorten a deadline set from a later one.
func (b *Breaker) clamp(now int64) {
	if b.clk == nil {
		return
	}
	switch b.State() {
	case Open:
		if span := b.openSpan.Load(); b.reopenAt.Load()-now > span {
			b.reopenAt.Store(now + span)
			b.rejectWith(b.newOpenError(Open, now+span, span))
		}
	case HalfOpen:
		lease, changed := int64(b.pol.Load().ProbeLease), false
		for i := range b.leases {
			if l := &b.leases[i]; l.token != 0 && l.deadline-now > lease {
				l.start, l.deadline, changed = now, now+lease, true
			}
		}
		if changed {
			b.updateProbeBusy()
		}
	}
	if b.hasNotBefore && b.notBefore-now > b.notBeforeSpan {
		b.notBefore = now + b.notBeforeSpan
	}
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
	if int(b.admitted) < len(b.leases) {
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
		b.rejectWith(b.newOpenError(HalfOpen, earliest, int64(b.pol.Load().ProbeLease)))
	}
}

// cooldown returns the jittered open period after failedProbes consecutive failed
// probes: Cooldown × CooldownMultiplier^failedProbes, stretched by the jitter, then
// capped at MaxCooldown (so jitter never makes a wait exceed the cap).
//
// With a prober attached the period does not grow: health probes are cheap, so the
// breaker probes at Cooldown, or at the prober's MaxInterval when that is shorter.
func (b *Breaker) cooldown() time.Duration {
	p := b.pol.Load()
	c := float64(p.Cooldown) * math.Pow(p.CooldownMultiplier, float64(b.failedProbes))
	if pl := b.prober.Load(); pl != nil {
		c = float64(min(p.Cooldown, time.Duration(pl.every)))
	}
	if p.Jitter > 0 {
		c *= 1 + p.Jitter*b.rand()
	}
	return time.Duration(min(c, float64(p.MaxCooldown)))
}

// noteRetryAfter remembers a delay the dependency stated: it may not be called before
// now + ra (ra capped at MaxRetryAfter). An open breaker's reopen time moves later at
// once; otherwise the instant floors the next open period.
func (b *Breaker) noteRetryAfter(now int64, ra time.Duration) {
	ra = min(ra, b.pol.Load().MaxRetryAfter)
	until := now + int64(ra)
	if !b.hasNotBefore || until > b.notBefore {
		b.notBefore, b.notBeforeSpan, b.hasNotBefore = until, int64(ra), true
	}
	if b.State() == Open && until > b.reopenAt.Load() {
		b.reopenAt.Store(until)
		b.openSpan.Store(max(b.openSpan.Load(), int64(ra)))
		b.rejectWith(b.newOpenError(Open, until, b.openSpan.Load()))
		b.emit(now, Open, Open, CauseRetryAfter, fmt.Sprintf("retry-after %s", ra))
	}
}

// open moves the breaker to Open (from closed or half-open) with a fresh cooldown,
// floored by the latest instant the dependency asked not to be called before.
func (b *Breaker) open(now int64, cause Cause, reason string) {
	wait := int64(b.cooldown())
	if b.hasNotBefore && b.notBefore-now > wait {
		wait = b.notBefore - now
		reason += fmt.Sprintf("; retry-after %s", time.Duration(wait))
	}
	b.openedAt, b.everOpened = now, true
	b.reopenAt.Store(now + wait)
	b.openSpan.Store(wait)
	b.rejectWith(b.newOpenError(Open, now+wait, wait))
	b.transition(now, Open, cause, reason)
}

// transition changes state under the lock, starts a new generation (so reports from
// permits of the old one are dropped) and queues the event.
func (b *Breaker) transition(now int64, to State, cause Cause, reason string) {
	old := b.loadSG()
	from := State(old & stateMask)
	next := (old>>genShift+1)<<genShift | old&timedBit | uint64(to)
	// Take the striped counters and retag them for the new generation before publishing
	// it: successes of the old generation that have not landed yet are then dropped, and
	// successes of the new one find their tag. While admitting they are successes to
	// keep; otherwise they counted rejections.
	if from.Admits() {
		b.win.fold(b.stripes, tagOf(next))
	} else {
		b.stripes.take(tagOf(next))
	}
	switch to {
	case Closed:
		b.win.reset(now)
		b.failedProbes = 0
		b.hasNotBefore = false
	case ForcedClosed:
		// Switched off without losing its numbers: the window is kept.
		b.failedProbes = 0
	case HalfOpen:
		clear(b.leases)
		b.admitted, b.succeeded = 0, 0
		b.updateProbeBusy()
	case ForcedOpen:
		b.rejectWith(b.newOpenError(ForcedOpen, 0, 0))
	}
	if to.Admits() {
		b.win.advance(now, b.stripes, tagOf(next))
		b.publishEnd(to)
	}
	hook(hookTransitionBeforePublish)
	b.storeSG(next)
	b.fleetNoted(cause)
	b.emit(now, from, to, cause, reason)
}

// publishEnd tells the success fast path when it must next take the lock: at the end of
// the current bucket, or at once while a success could trip the breaker.
func (b *Breaker) publishEnd(s State) {
	end := b.win.end()
	if s == Closed && b.successMayTrip() {
		end = math.MinInt64
	}
	b.bucketEnd.Store(end)
}

// successMayTrip reports whether one more success could make the gates trip: the
// window's failures (or slow calls) already reach their threshold against the call
// count the window would have after it, or MinimumCalls if that is more. A success
// only lowers the rates, so when this is false no success can trip the breaker until
// the window changes under the lock again (a failure, a slide, a transition). The
// stripes must have been folded.
func (b *Breaker) successMayTrip() bool {
	c := b.win.sums()
	next := c.Calls + 1
	if b.win.size > 0 {
		next = min(next, b.win.size)
	}
	d := max(b.minCalls(), next)
	return rateReached(c.Failures, d, b.pol.Load().FailureRateThreshold) ||
		b.slowNanos() > 0 && rateReached(c.SlowCalls, d, b.pol.Load().SlowCallRateThreshold)
}

// rateReached is the rate gate, exactly as documented: float64(n)/float64(of) ≥ threshold.
// The quotient is rounded once, so a fraction such as 2/3 or 1/10 meets a threshold
// written as the same fraction.
func rateReached(n, of int64, threshold float64) bool {
	return of > 0 && float64(n)/float64(of) >= threshold
}

// ForceOpen rejects every call until Reset or ForceClosed. reason is kept in the event.
func (b *Breaker) ForceOpen(reason string) { b.operate(ForcedOpen, "forced open by operator", reason) }

// ForceClosed lets every call through and keeps measuring, but never trips, until Reset
// or ForceOpen: the breaker is switched off without losing its numbers (the window keeps
// the calls it held).
func (b *Breaker) ForceClosed(reason string) {
	b.operate(ForcedClosed, "forced closed by operator", reason)
}

// Reset closes the breaker with an empty window, the cooldown growth and any
// server-stated delay forgotten.
func (b *Breaker) Reset(reason string) { b.operate(Closed, "reset by operator", reason) }

func (b *Breaker) operate(to State, what, reason string) {
	if reason != "" {
		what += ": " + reason
	}
	now := b.preciseNanos()
	b.mu.Lock()
	b.transition(now, to, CauseOperator, what)
	b.mu.Unlock()
	b.deliver()
}
