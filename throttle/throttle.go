package throttle

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// ConfigError reports one invalid configuration value; it is the module-wide
// agentbreaker.ConfigError.
type ConfigError = agentbreaker.ConfigError

// Defaults.
const (
	defaultK           = 2.0
	defaultMinRequests = 20
	DefaultWindow      = 30 * time.Second
	defaultBuckets     = 10
)

// Config configures one Throttle. Zero fields take the defaults.
type Config struct {
	// Name identifies the throttle in errors and metrics: the dependency key. Defaults
	// to "".
	Name string
	// K is the multiplier on accepts in the SRE formula: how many calls per accepted
	// one the client keeps sending before it sheds. At least 1 (below 1 a dependency
	// that handles everything would be shed). Defaults to 2, the SRE book's value.
	K float64
	// MinRequests is how many requests the window must hold before anything is shed,
	// so that three failures after a quiet hour do not shed the fourth call; it is
	// also twice the calls a window the throttle always lets through, so that what
	// the dependency does with them stays measured (p is at most
	// 1 − (MinRequests/2)/(requests+1)). Defaults
	// to 20; a negative value is refused. Set it to 1 to shed from the first request.
	MinRequests int
	// Window is the span the counts cover. Defaults to 30s.
	Window time.Duration
	// Buckets is how many slices the window slides by (1 to 16384); Window/Buckets must
	// be at least a millisecond. Defaults to 10.
	Buckets int
	// Clock is the time source. Defaults to the system clock, read through package
	// clock's coarse cache on the lock-free paths.
	Clock clock.Clock
	// Rand returns uniform random 64-bit values for the shedding draw; it is called
	// concurrently and must be safe for that. Defaults to the runtime's per-thread
	// generator. A seeded one makes a simulation repeatable. It draws for Allow and
	// AllowAt; AllowDraw takes the caller's draw instead, and package callbacks passes
	// each invocation's own (a hash of its ID), so that a turn is shed whole.
	Rand func() uint64
}

// Throttle sheds calls to one dependency with the SRE probability over its window. It
// is safe for concurrent use; Allow and Report take no lock and allocate nothing.
type Throttle struct {
	prob atomic.Uint64 // math.Float64bits of the share to shed; 0 while nothing is shed
	at   atomic.Int64  // the epoch prob was computed in
	win  window

	name   string
	k      atomic.Uint64 // math.Float64bits of K; SetConfig changes it
	minReq atomic.Uint64 // MinRequests; SetConfig changes it
	clk    clock.Clock
	epoch  time.Time
	rand   func() uint64

	shed [numPriorities]atomic.Uint64 // refusals per priority, over the throttle's life
	// demand counts the calls of each priority asked about while shedding, in mixUnits,
	// decayed by a quarter each bucket while it holds more than mixKeep calls: the mix
	// the share p is taken from, lowest priorities first.
	demand [numPriorities]atomic.Uint64
	fleet  atomic.Pointer[fleetSums]
	ind    independence // failures that shedding does not lower (independence.go)
}

// New returns a throttle, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Throttle, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Throttle{name: c.Name, clk: c.Clock, rand: c.Rand}
	t.k.Store(math.Float64bits(c.K))
	t.minReq.Store(uint64(c.MinRequests))
	t.win.width = int64(c.Window) / int64(c.Buckets)
	t.win.slots = make([]atomic.Uint64, c.Buckets)
	t.ind.held.width = t.win.width
	t.ind.held.slots = make([]atomic.Uint64, c.Buckets)
	if t.clk == nil {
		t.epoch = clock.CoarseBase()
	} else {
		t.epoch = t.clk.Now()
	}
	return t, nil
}

// kNow is K in force.
func (t *Throttle) kNow() float64 { return math.Float64frombits(t.k.Load()) }

// SetConfig changes K and MinRequests of a running throttle, or returns a
// *ConfigError naming the first invalid field and changes nothing. The window keeps
// its counts, so Window and Buckets must stay what they are (zero fields take the
// defaults, as in New); Name, Clock and Rand are not read.
func (t *Throttle) SetConfig(cfg Config) error {
	c := cfg.WithDefaults()
	if err := c.Validate(); err != nil {
		return err
	}
	if n := len(t.win.slots); c.Buckets != n || int64(c.Window)/int64(n) != t.win.width {
		w := time.Duration(t.win.width) * time.Duration(n)
		return &ConfigError{Package: "throttle", Field: "Window", Value: c.Window,
			Problem: fmt.Sprintf("and Buckets cannot change while the throttle runs (it has %s in %d buckets)", w, n)}
	}
	t.k.Store(math.Float64bits(c.K))
	t.minReq.Store(uint64(c.MinRequests))
	return nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Throttle {
	t, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return t
}

// WithDefaults returns cfg with its zero fields set to the defaults.
func (cfg Config) WithDefaults() Config {
	if cfg.K == 0 {
		cfg.K = defaultK
	}
	if cfg.MinRequests == 0 {
		cfg.MinRequests = defaultMinRequests
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Buckets == 0 {
		cfg.Buckets = defaultBuckets
	}
	return cfg
}

// Validate checks a configuration after defaults, naming the first invalid field.
func (cfg Config) Validate() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "throttle", Field: field, Value: v, Problem: problem}
	}
	switch {
	case math.IsNaN(cfg.K) || math.IsInf(cfg.K, 0) || cfg.K < 1:
		return bad("K", cfg.K, "must be a finite number of at least 1")
	case cfg.MinRequests < 0:
		return bad("MinRequests", cfg.MinRequests, "must not be negative")
	case cfg.Window < 0:
		return bad("Window", cfg.Window, "must be positive")
	case cfg.Buckets < 1 || cfg.Buckets > maxBuckets:
		return bad("Buckets", cfg.Buckets, fmt.Sprintf("must be between 1 and %d", maxBuckets))
	case cfg.Window/time.Duration(cfg.Buckets) < time.Millisecond:
		return bad("Window", cfg.Window, fmt.Sprintf("must be at least a millisecond per bucket (%d buckets)", cfg.Buckets))
	}
	return nil
}

func (cfg Config) withDefaults() (Config, error) {
	c := cfg.WithDefaults()
	return c, c.Validate()
}

// Name returns the throttle's name.
func (t *Throttle) Name() string { return t.name }

func (t *Throttle) nanos() int64 {
	if t.clk == nil {
		return clock.CoarseNanos()
	}
	return int64(t.clk.Now().Sub(t.epoch))
}

func (t *Throttle) toNanos(now time.Time) int64 { return int64(now.Sub(t.epoch)) }

// Allow reports whether a call of priority p may be sent. A refused call counts as a
// request; an allowed one counts when it reports.
func (t *Throttle) Allow(p Priority) bool {
	// Kept small enough to inline: while nothing is shed, one atomic load.
	if t.prob.Load() == 0 {
		return true
	}
	return t.allowAt(t.nanos(), p)
}

// Shedding reports whether any call may be refused now: p > 0. It is one atomic load,
// for callers that would rather not work out a call's priority while nothing is shed.
func (t *Throttle) Shedding() bool { return t.prob.Load() != 0 }

// AllowAt is Allow at the time given by the caller.
func (t *Throttle) AllowAt(now time.Time, p Priority) bool {
	if t.prob.Load() == 0 {
		return true
	}
	return t.allowAt(t.toNanos(now), p)
}

// AllowDraw is Allow with the caller's uniform random draw in place of the
// throttle's own. Calls given the same draw are shed together: at one share p, a draw
// refused for one call of a priority is refused for all of them. Package callbacks
// draws once per invocation, so that a turn gets all of its calls to a dependency or
// none, instead of half its data.
func (t *Throttle) AllowDraw(p Priority, draw uint64) bool {
	if t.prob.Load() == 0 {
		return true
	}
	return t.decide(t.nanos(), p, draw, true)
}

func (t *Throttle) allowAt(now int64, p Priority) bool { return t.decide(now, p, 0, false) }

func (t *Throttle) decide(now int64, p Priority, draw uint64, given bool) bool {
	e := t.win.epochOf(now)
	pr := math.Float64frombits(t.prob.Load())
	if t.at.Load() != e {
		pr = t.recompute(e) // a quiet spell: the window slid since p was computed
	}
	pn := p.norm()
	t.demand[pn].Add(mixUnit)
	q := t.shedShare(pr, pn)
	if q <= 0 {
		return true
	}
	if !given {
		draw = t.draw()
	}
	if q < 1 && float64(draw>>11)*(1.0/(1<<53)) >= q {
		return true
	}
	t.shed[pn].Add(1)
	t.hold(e)
	t.count(e, false)
	return false
}

func (t *Throttle) draw() uint64 {
	if t.rand != nil {
		return t.rand()
	}
	return uint64(cheaprand64())
}

// Report counts one sent call: accepted when the dependency handled it (see [Judge]).
// Do not report a call whose outcome says nothing about the dependency's capacity
// (cancelled, stopped locally).
func (t *Throttle) Report(accepted bool) {
	e, slot := t.win.bucketOf(t.nanos())
	t.countAt(e, slot, accepted)
}

// Refused counts one call that something else refused (an open breaker): a request
// without an accept, as a failed call would be. Counting them keeps the outage in the
// window, so that when the breaker closes, calls come back as the dependency accepts
// them rather than all at once.
func (t *Throttle) Refused() {
	e := t.win.epochOf(t.nanos())
	t.hold(e)
	t.count(e, false)
}

// ReportAt is Report at the time given by the caller.
func (t *Throttle) ReportAt(now time.Time, accepted bool) {
	t.count(t.win.epochOf(t.toNanos(now)), accepted)
}

// recomputeEvery is how many requests a bucket takes between two computations of p
// from accepted calls (a request that was not accepted, which can only raise p,
// recomputes it at once, and so does the first of a bucket): the sum over the window
// costs a read of every bucket, which the healthy path pays once in so many calls.
const recomputeEvery = 8

func (t *Throttle) count(e int64, accepted bool) {
	t.countAt(e, int(uint64(e)%uint64(len(t.win.slots))), accepted)
}

func (t *Throttle) countAt(e int64, slot int, accepted bool) {
	n, fresh := t.win.addAt(e, slot, accepted)
	if fresh {
		t.decay()
		t.evaluate(e)
	}
	// An accepted call can only lower p: while p is 0 there is nothing to lower.
	if !accepted || ((fresh || n%recomputeEvery == 0) && t.prob.Load() != 0) {
		t.recompute(e)
	}
}

// recompute sets p from the window ending in epoch e and returns it. Two callers may
// race; the later store wins, and the next recomputation corrects a stale one.
func (t *Throttle) recompute(e int64) float64 {
	req, acc := t.sums(e)
	p := shedShare(req, acc, t.kFor(), t.minReq.Load())
	t.prob.Store(math.Float64bits(p))
	t.at.Store(e)
	return p
}

func (t *Throttle) sums(e int64) (req, acc uint64) {
	if f := t.fleet.Load(); f != nil {
		return f.sums(t, e)
	}
	return t.win.sums(e)
}

// shedShare is the SRE formula with the volume gate. A window without a single accept
// is a total outage, which is the breaker's to handle: shedding nearly every call then
// (the formula's req/(req+1)) would keep from the breaker the failures it opens on.
func shedShare(req, acc uint64, k float64, minReq uint64) float64 {
	if acc == 0 || req < minReq {
		return 0
	}
	p := max(0, (float64(req)-k*float64(acc))/float64(req+1))
	// Send at least MinRequests/2 calls a window, so that what the dependency does with
	// them stays measured (independence.go: a share failing at any load is told only
	// from calls sent).
	return min(p, 1-float64(minReq)/2/float64(req+1))
}

// Accepting reports whether the window holds at least one accepted call: the
// dependency is up, if only in part. Fleet counts included.
func (t *Throttle) Accepting() bool {
	_, acc := t.sums(t.win.epochOf(t.nanos()))
	return acc > 0
}

// Counts are the requests and accepts in a throttle's window.
type Counts struct {
	Requests, Accepts uint64
}

// Counts returns this replica's counts in the window, read precisely now.
func (t *Throttle) Counts() Counts { return t.CountsAt(t.now()) }

// CountsAt is Counts at the time given by the caller.
func (t *Throttle) CountsAt(now time.Time) Counts {
	req, acc := t.win.sums(t.win.epochOf(t.toNanos(now)))
	return Counts{Requests: req, Accepts: acc}
}

// Probability returns the share of Low calls being shed now (p in the package doc),
// from the window as it stands at this instant.
func (t *Throttle) Probability() float64 { return t.probabilityAt(t.now()) }

// probabilityAt is Probability at the time given by the caller.
func (t *Throttle) probabilityAt(now time.Time) float64 {
	return t.recompute(t.win.epochOf(t.toNanos(now)))
}

// ShedProbability returns the chance that a call of priority pr is refused at share
// p, given the mix of priorities the throttle has seen while shedding (see the package
// doc for the rule).
func (t *Throttle) ShedProbability(p float64, pr Priority) float64 { return t.shedShare(p, pr.norm()) }

// minDemand is how many calls the mix must have counted before priorities are told
// apart: until then every call is shed with probability p.
const minDemand = 16

// mixKeep is how many calls the mix spans at least: a bucket's decay that would leave
// fewer is skipped. Decayed by time alone, the mix would hold about four buckets'
// calls, under minDemand at fewer than four calls a bucket, and a dependency called
// that rarely would have every call shed at p, whatever its priority (issue 43).
const mixKeep = 4 * minDemand

// mixUnit is one call in the mix's counts: fixed point, so that a quarter of a small
// count decays too instead of rounding to nothing, and a priority no longer asked
// about leaves the mix.
const mixUnit = 1 << 8

// shedShare takes the share p from the lowest priorities first: low calls are refused
// until all of them are, then normal ones, then high, then critical. With the mix's
// shares d, a priority is refused with probability min(1, what is left of p / d).
func (t *Throttle) shedShare(p float64, pn Priority) float64 {
	var d [numPriorities]float64
	var total float64
	for q := Low; q <= Critical; q++ {
		d[q] = float64(t.demand[q].Load())
		total += d[q]
	}
	if total < minDemand*mixUnit {
		return min(1, p)
	}
	left := p
	for q := Low; q <= Critical; q++ {
		share := d[q] / total
		if q == pn {
			if share == 0 {
				return min(1, max(0, left)) // not in the mix yet: shed as the rest of it
			}
			return min(1, max(0, left/share))
		}
		left -= share
		if left <= 0 {
			return 0
		}
	}
	return 0
}

// decay forgets a quarter of the mix, once per bucket, unless that would leave it
// fewer than mixKeep calls: at a few calls a bucket the mix spans the last mixKeep
// calls instead of the last few buckets.
func (t *Throttle) decay() {
	var total uint64
	for q := Low; q <= Critical; q++ {
		total += t.demand[q].Load()
	}
	if total-total/4 < mixKeep*mixUnit {
		return
	}
	for q := Low; q <= Critical; q++ {
		if v := t.demand[q].Load(); v > 0 {
			t.demand[q].Store(v - v/4)
		}
	}
}

// Shed returns how many calls of priority p the throttle refused over its life.
func (t *Throttle) Shed(p Priority) uint64 { return t.shed[p.norm()].Load() }

// Reset empties the window: nothing is shed until it fills again.
func (t *Throttle) Reset() {
	t.win.reset()
	t.ind.held.reset()
	t.forget()
	t.prob.Store(0)
	for q := range t.demand {
		t.demand[q].Store(0)
	}
}

func (t *Throttle) now() time.Time {
	if t.clk == nil {
		return t.epoch.Add(time.Duration(clock.PreciseNanos()))
	}
	return t.clk.Now()
}
