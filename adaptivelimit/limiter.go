package adaptivelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
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
// allocate nothing; the update that recomputes the limit runs at most once per
// UpdateInterval, on whichever call finds it due, under a lock that no other call
// waits for (TryLock).
type Limiter struct {
	name string
	cfg  Config
	clk  clock.Clock // nil: the coarse system clock
	base time.Time   // the instant every time inside is counted from (nanoseconds since base)

	limit    atomic.Int64 // the limit in force (held down during a no-load measurement)
	inFlight atomic.Int64
	startSum atomic.Int64 // sum of the starts of the calls in flight
	peak     atomic.Int64 // the most calls in flight since the last update
	due      atomic.Int64 // from when the next update may run

	sampleSum atomic.Int64 // latencies finished since the last update, in ns
	sampleN   atomic.Int64
	sampleMin atomic.Int64 // their minimum; math.MaxInt64 when none

	noLoad atomic.Int64 // the no-load latency in ns; 0 until measured

	// A no-load measurement: calls admitted from measureFrom on report into
	// measureMin and measureN.
	measuring   atomic.Bool
	measureFrom atomic.Int64
	measureMin  atomic.Int64
	measureN    atomic.Int64

	refused [5]atomic.Uint64 // per throttle.Priority (index 0 unused)

	mu      sync.Mutex // held (TryLock) by the one update running; guards the fields below
	limitF  float64    // the controller's limit, unrounded
	refresh int64      // when the next no-load measurement starts
	held    int64      // the limit held while a no-load measurement runs
}

// New returns a limiter, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Limiter, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limiter{name: c.Name, cfg: c}
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
	l.limit.Store(int64(c.InitialLimit))
	l.limitF = float64(c.InitialLimit)
	l.sampleMin.Store(math.MaxInt64)
	l.due.Store(l.now() + int64(c.UpdateInterval))
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
func (l *Limiter) Bounds() (minLimit, maxLimit int) { return l.cfg.MinLimit, l.cfg.MaxLimit }

// AtFloor reports whether the limit in force is MinLimit.
func (l *Limiter) AtFloor() bool { return l.limit.Load() <= int64(l.cfg.MinLimit) }

// NoLoad returns the measured no-load latency, or 0 before the first measurement.
func (l *Limiter) NoLoad() time.Duration { return time.Duration(l.noLoad.Load()) }

// InFlight returns how many admitted calls have not finished.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

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
	l     *Limiter
	start int64 // nanoseconds since the limiter's base
}

// Acquire admits a call of priority p, or refuses it at once with a *LimitError when
// the calls in flight fill the priority's share of the limit.
func (l *Limiter) Acquire(p throttle.Priority) (Permit, error) { return l.acquire(l.now(), p) }

// AcquireAt is Acquire at the time now.
func (l *Limiter) AcquireAt(now time.Time, p throttle.Priority) (Permit, error) {
	return l.acquire(l.at(now), p)
}

func (l *Limiter) acquire(now int64, p throttle.Priority) (Permit, error) {
	if now >= l.due.Load() {
		l.update(now)
	}
	p = p.Norm()
	limit := int(l.limit.Load())
	allowed := Allowed(limit, p)
	for {
		n := l.inFlight.Load()
		if n >= int64(allowed) {
			l.refused[p].Add(1)
			return Permit{}, &LimitError{Limiter: l.name, Limit: limit, Allowed: allowed, Priority: p}
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			if pk := l.peak.Load(); n+1 > pk {
				l.peak.CompareAndSwap(pk, n+1) // a lost race keeps a peak nearly as high
			}
			break
		}
	}
	l.startSum.Add(now)
	return Permit{l: l, start: now}, nil
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
	lat := max(n-p.start, 1)
	l.sampleSum.Add(lat)
	l.sampleN.Add(1)
	if ok {
		casMin(&l.sampleMin, lat)
		if l.measuring.Load() && p.start >= l.measureFrom.Load() {
			casMin(&l.measureMin, lat)
			l.measureN.Add(1)
		}
	}
	l.end(p.start)
	if n >= l.due.Load() {
		l.update(n)
	}
}

// Release ends the call without a sample: it was not sent, or it failed fast in a
// way that says nothing about the dependency's latency (a fast error must not lower
// the no-load latency).
func (p Permit) Release() {
	if p.l != nil {
		p.l.end(p.start)
	}
}

func (l *Limiter) end(start int64) {
	l.startSum.Add(-start)
	l.inFlight.Add(-1)
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
func (l *Limiter) Config() Config { return l.cfg }
