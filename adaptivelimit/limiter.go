package adaptivelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/stripe"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// ErrLimited is the sentinel every refusal unwraps to.
var ErrLimited = errors.New("adaptivelimit: over the limit")

// LimitError is returned by Acquire when the calls in flight have reached what the
// call's priority may use of the limit. It unwraps to [ErrLimited] and is a
// classify.LocalRejection: the call never left the process.
type LimitError struct {
	// Limiter is the limiter's name (the dependency key).
	Limiter string
	// Limit is the limit when the call was refused; Allowed is the share of it the
	// call's priority may use (see the package doc).
	Limit, Allowed int
	// Priority is the refused call's priority.
	Priority throttle.Priority
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("adaptivelimit: %s is at its limit (%d of %d calls in progress for priority %s)", e.Limiter, e.Allowed, e.Limit, e.Priority)
}

// Unwrap returns [ErrLimited].
func (e *LimitError) Unwrap() error { return ErrLimited }

// RejectedLocally names the error class of the refusal: the bulkhead's
// (classify.ClassBulkheadFull), because to the model and to the breaker a call
// refused for concurrency is the same whether the limit is fixed or learned.
func (e *LimitError) RejectedLocally() string { return "bulkhead_full" }

// shares are the parts of the limit each priority may fill, lowest first: a Low call
// is refused once 60% of the limit is in flight, a Critical call only at the limit.
var shares = [...]float64{0, 0.6, 0.8, 0.9, 1} // index: throttle.Priority (0 = Normal)

// Limiter is an adaptive concurrency limit for one dependency (see the package doc for
// the algorithm). It is safe for concurrent use: Acquire and Done take no lock and
// allocate nothing, and on the admitted path they write only the caller's stripe (see
// stripe); the update that recomputes the limit runs at most once per UpdateInterval,
// on whichever call finds it due, under a lock that no other call waits for (TryLock).
type Limiter struct {
	// Read on every call, written at most once per update.
	name      string
	cfg       atomic.Pointer[Config] // replaced whole by SetConfig
	clk       clock.Clock            // nil: the coarse system clock
	base      time.Time              // the instant every time inside is counted from (nanoseconds since base)
	stripes   *[stripe.Count]slotStripe
	limit     atomic.Int64    // the limit in force (held down during a no-load measurement)
	allowed   [5]atomic.Int64 // Allowed(limit, p) per throttle.Priority (index 0 unused)
	due       atomic.Int64    // from when the next update may run
	half      atomic.Int64    // calls in flight at once that put the limit in use: ⌈limit/2⌉ of the unrounded limit
	inUse     atomic.Bool     // half the limit was in flight at some moment since the last update
	noLoad    atomic.Int64    // the no-load latency in ns; 0 until measured
	sampleMin atomic.Int64    // least latency that succeeded since the last update; math.MaxInt64 when none
	measuring atomic.Bool     // a no-load measurement holds the limit down
	contended atomic.Bool     // two callers were seen on one stripe: pick stripes by processor
	_         [64]byte

	// leased is how many slots the stripes hold: the calls in flight and the free
	// slots parked on stripes (credit). It is written when a stripe runs out of credit
	// or parks more than one, not on the admitted path (see acquireSlow).
	leased atomic.Int64
	_      [56]byte

	// A no-load measurement: calls admitted from measureFrom on report into
	// measureMin and measureN (written only while measuring).
	measureFrom atomic.Int64
	measureMin  atomic.Int64
	measureN    atomic.Int64

	refused [5]atomic.Uint64 // per throttle.Priority (index 0 unused)

	mu        sync.Mutex // held (TryLock) by the one update running; guards the fields below
	limitF    float64    // the controller's limit, unrounded
	started   bool       // an update ran: the timeline has begun
	quiet     bool       // the last check found calls in flight and none ended since the one before
	quietFrom int64      // that check's time
	seen      int64      // the samples held at the last update (0 after they were taken)
	measured  bool       // a no-load latency was measured: refresh holds a time
	refresh   int64      // when the next no-load measurement starts
	held      int64      // the limit held while a no-load measurement runs
}

// slotStripe is one cache line of a limiter's counters. A call writes the stripe it
// was admitted on (the Permit records which), so per stripe the counts are exact.
//
// slots packs the stripe's calls in flight (high 32 bits) with its credit (low 32
// bits): slots leased from the limiter and free, which the stripe's next call takes
// without touching a shared line. A call's end turns its slot into credit; a stripe
// keeps one and gives the rest back to leased. samples packs the latencies finished since the last
// update: their count (high 24 bits) and their sum in units of 16 ns (low 40 bits).
type slotStripe struct {
	slots   atomic.Uint64
	samples atomic.Uint64
	_       [48]byte
}

const (
	inFlightOne = 1 << 32   // one call in flight, in slots
	creditMask  = 1<<32 - 1 // the credit's bits of slots
	sampleOne   = 1 << 40   // one sample, in samples
	sampleMask  = 1<<40 - 1 // the latency sum's bits of samples
	sampleShift = 4         // a latency sum unit is 1<<sampleShift ns
	sampleMax   = 1 << 36   // a latency counts at most this many units (18 min)
	drainCount  = 1 << 23   // an update runs early once a stripe holds this many samples,
	drainSum    = 1 << 39   // or this much latency, so neither field can overflow

	// endDelta is one call in flight less and one credit more, as an addition.
	endDelta = ^uint64(inFlightOne-1) + 1
)

// New returns a limiter, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Limiter, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limiter{name: c.Name, stripes: new([stripe.Count]slotStripe)}
	l.cfg.Store(&c)
	if !clock.IsSystem(c.Clock) && c.Clock != nil {
		l.clk = c.Clock
	}
	// Times are kept as nanoseconds since base, taken with time.Time.Sub, so that any
	// instant a clock gives (a fake clock's zero time included) is in range. On the
	// system clock base is the coarse clock's own, and a reading costs nothing more.
	if l.clk == nil {
		l.base = clock.CoarseBase()
	} else {
		l.base = l.clk.Now()
	}
	l.setLimit(int64(c.InitialLimit))
	l.limitF = float64(c.InitialLimit)
	l.half.Store(halfOf(l.limitF))
	l.sampleMin.Store(math.MaxInt64)
	// The first call runs an update, which only starts the timeline: times may come
	// from the limiter's clock or from a caller's (AcquireAt, DoneAt), and the intervals
	// count from the first of them, not from New.
	l.due.Store(math.MinInt64)
	return l, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Limiter {
	l, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return l
}

// now is the time now, in nanoseconds since base.
func (l *Limiter) now() int64 {
	if l.clk == nil {
		return clock.CoarseNanos()
	}
	return l.at(l.clk.Now())
}

// at is t in nanoseconds since base.
func (l *Limiter) at(t time.Time) int64 { return int64(t.Sub(l.base)) }

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// Limit returns the limit in force.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// Bounds returns MinLimit and MaxLimit.
func (l *Limiter) Bounds() (minLimit, maxLimit int) {
	c := l.cfg.Load()
	return c.MinLimit, c.MaxLimit
}

// AtFloor reports whether the limit in force is MinLimit.
func (l *Limiter) AtFloor() bool { return l.limit.Load() <= int64(l.cfg.Load().MinLimit) }

// NoLoad returns the measured no-load latency, or 0 before the first measurement.
func (l *Limiter) NoLoad() time.Duration { return time.Duration(l.noLoad.Load()) }

// InFlight returns how many admitted calls have not finished.
func (l *Limiter) InFlight() int { return int(l.inFlight()) }

// inFlight sums the stripes' calls in flight. The stripes are read one after the
// other, so under concurrent calls the sum is approximate.
func (l *Limiter) inFlight() (n int64) {
	for i := range l.stripes {
		n += int64(l.stripes[i].slots.Load() >> 32)
	}
	return n
}

// PriorityMatters reports whether a call's priority may decide its admission now: the
// calls in flight have reached the lowest priority's share of the limit. While it is
// false every call is admitted whatever its priority, so a caller whose priority costs
// something to look up can skip it. Like InFlight it is a reading: calls admitted
// between it and the caller's Acquire can make the priority decide after all, and the
// call is then judged at the priority the caller passed. It reads one word while the
// slots leased (the calls in flight and the free slots parked on stripes, never fewer
// than the calls in flight) are under that share, and sums the stripes only when they
// are not: a small limit is reached by parked slots alone, and a lookup on every call
// would be paid for nothing.
func (l *Limiter) PriorityMatters() bool {
	low := l.allowed[throttle.Low].Load()
	return l.leased.Load() >= low && l.inFlight() >= low
}

// setLimit puts limit in force, with each priority's share of it.
func (l *Limiter) setLimit(limit int64) {
	for p := throttle.Low; p <= throttle.Critical; p++ {
		l.allowed[p].Store(int64(Allowed(int(limit), p)))
	}
	l.limit.Store(limit)
}

// Measuring reports whether a no-load measurement holds the limit down.
func (l *Limiter) Measuring() bool { return l.measuring.Load() }

// Refused returns how many calls of priority p the limiter has refused over its life
// (the zero priority reads Normal's count).
func (l *Limiter) Refused(p throttle.Priority) uint64 { return l.refused[p.Norm()].Load() }

// Allowed returns how many calls of priority p may be in flight under limit: the
// priority's share of it, rounded up, at least 1.
func Allowed(limit int, p throttle.Priority) int {
	return max(1, int(math.Ceil(float64(limit)*shares[p.Norm()])))
}

// Permit is an admitted call. Report its end exactly once, with Done (it succeeded),
// TimedOut (it ran into its timeout) or Release (its latency says nothing: it was not
// sent, or failed fast); a zero Permit does nothing. It is a
// plain value, safe to copy; reporting two copies of one permit counts it twice.
type Permit struct {
	l      *Limiter
	start  int64 // nanoseconds since the limiter's base
	stripe int   // the stripe it was admitted on
}

// Acquire admits a call of priority p, or refuses it at once with a *LimitError when
// the calls in flight fill the priority's share of the limit.
func (l *Limiter) Acquire(p throttle.Priority) (Permit, error) { return l.acquire(l.now(), p) }

// AcquireAt is Acquire at the time now.
func (l *Limiter) AcquireAt(now time.Time, p throttle.Priority) (Permit, error) {
	return l.acquire(l.at(now), p)
}

// stripeIndex is the caller's stripe: by stack address until two callers were seen on
// one stripe, by processor from then on (as the breaker's window picks its stripes).
func (l *Limiter) stripeIndex() int {
	if l.contended.Load() {
		return stripe.ByProcessor()
	}
	return stripe.ByStack()
}

// acquire admits on the caller's stripe's credit when it has some and the slots leased
// are within the priority's share: then the calls in flight, never more than the slots
// leased, are within it too, and nothing shared is written. Otherwise acquireSlow
// leases a slot.
func (l *Limiter) acquire(now int64, p throttle.Priority) (Permit, error) {
	if now >= l.due.Load() {
		l.update(now, false)
	}
	p = p.Norm()
	i := l.stripeIndex() & (stripe.Count - 1)
	s := &l.stripes[i]
	if leased := l.leased.Load(); leased <= l.allowed[p].Load() {
		for {
			old := s.slots.Load()
			if old&creditMask == 0 {
				break
			}
			if s.slots.CompareAndSwap(old, old-1+inFlightOne) {
				return l.admitted(i, leased, now), nil
			}
			l.contended.Store(true)
		}
	}
	return l.acquireSlow(now, p, s, i)
}

// acquireSlow leases a slot for a call while the slots leased are under the priority's
// share. When they are not, credit parked on other stripes may be what fills them: it
// takes that back once and tries again, so a refusal means the calls in flight (not
// parked credit) fill the share.
func (l *Limiter) acquireSlow(now int64, p throttle.Priority, s *slotStripe, i int) (Permit, error) {
	allowed := l.allowed[p].Load()
	for reclaimed := false; ; {
		n := l.leased.Load()
		if n < allowed {
			if l.leased.CompareAndSwap(n, n+1) {
				s.slots.Add(inFlightOne)
				return l.admitted(i, n+1, now), nil
			}
			continue
		}
		if reclaimed || l.reclaim() == 0 {
			l.refused[p].Add(1)
			limit := int(l.limit.Load())
			return Permit{}, &LimitError{Limiter: l.name, Limit: limit, Allowed: Allowed(limit, p), Priority: p}
		}
		reclaimed = true
	}
}

// admitted returns the permit of a call admitted on stripe i with leased slots leased.
// The calls in flight are never more than the slots leased, so only when those reach
// half the limit can the limit be in use, and only then (once per update) are the
// stripes summed to see.
func (l *Limiter) admitted(i int, leased, now int64) Permit {
	if leased >= l.half.Load() && !l.inUse.Load() {
		l.noteUse()
	}
	return Permit{l: l, start: now, stripe: i}
}

// noteUse marks the limit in use when half of it is in flight now. The calls in flight
// rise only by admissions, so checking at each admission once the slots leased allow it
// sees the moment they reach half, on whichever stripes they are.
func (l *Limiter) noteUse() {
	if l.inFlight() >= l.half.Load() {
		l.inUse.Store(true)
	}
}

// halfOf is the calls in flight that put an unrounded limit in use: at least half.
func halfOf(limit float64) int64 { return int64(math.Ceil(limit / 2)) }

// reclaim takes every stripe's credit back from leased and returns how much it took.
func (l *Limiter) reclaim() int64 {
	var took int64
	for i := range l.stripes {
		s := &l.stripes[i]
		for {
			old := s.slots.Load()
			c := old & creditMask
			if c == 0 {
				break
			}
			if s.slots.CompareAndSwap(old, old-c) {
				took += int64(c)
				break
			}
		}
	}
	if took > 0 {
		l.leased.Add(-took)
	}
	return took
}

// Done ends a call that succeeded and records its latency (now minus its start): a
// sample for the limit and for the no-load latency.
func (p Permit) Done() {
	if p.l != nil {
		p.finish(p.l.now(), true)
	}
}

// DoneAt is Done at the time now.
func (p Permit) DoneAt(now time.Time) {
	if p.l != nil {
		p.finish(p.l.at(now), true)
	}
}

// TimedOut ends a call that ran into its timeout: its latency is a sample for the
// limit (a timeout is the slowest answer there is) but never for the no-load latency.
func (p Permit) TimedOut() {
	if p.l != nil {
		p.finish(p.l.now(), false)
	}
}

// TimedOutAt is TimedOut at the time now.
func (p Permit) TimedOutAt(now time.Time) {
	if p.l != nil {
		p.finish(p.l.at(now), false)
	}
}

func (p Permit) finish(n int64, ok bool) {
	l := p.l
	if l == nil {
		return
	}
	s := &l.stripes[p.stripe&(stripe.Count-1)]
	lat := max(n-p.start, 1)
	w := s.samples.Add(sampleOne | min(uint64(lat)>>sampleShift, sampleMax))
	if ok {
		casMin(&l.sampleMin, lat)
		if l.measuring.Load() && p.start >= l.measureFrom.Load() {
			casMin(&l.measureMin, lat)
			l.measureN.Add(1)
		}
	}
	l.end(s)
	if drain := w>>40 >= drainCount || w&sampleMask >= drainSum; drain || n >= l.due.Load() {
		l.update(n, drain)
	}
}

// Release ends the call without a sample: it was not sent, or it failed fast in a
// way that says nothing about the dependency's latency (a fast error must not lower
// the no-load latency).
func (p Permit) Release() {
	if p.l != nil {
		p.l.end(&p.l.stripes[p.stripe&(stripe.Count-1)])
	}
}

// end turns the call's slot into credit on its stripe; a stripe with more than one
// gives the rest back, so that idle stripes park little.
func (l *Limiter) end(s *slotStripe) {
	if v := s.slots.Add(endDelta); v&creditMask > 1 {
		l.giveBack(s)
	}
}

func (l *Limiter) giveBack(s *slotStripe) {
	for {
		old := s.slots.Load()
		c := old & creditMask
		if c <= 1 {
			return
		}
		if s.slots.CompareAndSwap(old, old-(c-1)) {
			l.leased.Add(-int64(c - 1))
			return
		}
	}
}

func casMin(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v >= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Config returns the limiter's configuration with the defaults applied.
func (l *Limiter) Config() Config { return *l.cfg.Load() }

// SetConfig changes the bounds, tolerance, intervals and sample count of a running
// limiter, or returns a *ConfigError naming the first invalid field and changes
// nothing. The limit in force is brought within the new bounds; the measured no-load
// latency and the samples are kept. Name and Clock stay the limiter's; InitialLimit,
// which only mattered before the first update, takes its default within the bounds
// when zero.
func (l *Limiter) SetConfig(cfg Config) error {
	old := l.cfg.Load()
	cfg.Name, cfg.Clock = old.Name, old.Clock
	c, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg.Store(&c)
	lo, hi := float64(c.MinLimit), float64(c.MaxLimit)
	l.limitF = min(max(l.limitF, lo), hi)
	l.held = min(max(l.held, int64(c.MinLimit)), int64(c.MaxLimit))
	l.half.Store(halfOf(l.limitF))
	l.setLimit(min(max(l.limit.Load(), int64(c.MinLimit)), int64(c.MaxLimit)))
	return nil
}
