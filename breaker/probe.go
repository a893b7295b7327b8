package breaker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Probes. Without a prober, the first call that arrives after the cooldown is the
// probe, whatever it does; a caller that must never be the probe (a mutating tool's
// call: replaying a payment to test a dependency that failed a minute ago is the
// worst probe there is) asks with AllowNoProbe, which refuses where Allow would hand
// out a probe.
//
// With a prober attached (package probe), half-open belongs to it: every user call is
// refused while the breaker is open or half-open, and only AllowProbe ends the open
// period and takes a probe slot. AllowProbe goes through the same lock, leases and
// fleet lease as a user probe, so exactly one probe is out whoever sends it.

// healthToken marks the lease tokens of the prober's probes, so that the transition
// a probe causes can say it was a health probe. Bit 62: the token travels in a
// Permit's int64 and stays positive.
const healthToken = 1 << 62

// minProbeEvery is the shortest probe interval a breaker accepts, the floor of
// Policy.Cooldown: a shorter one would turn a probe into load.
const minProbeEvery = 10 * time.Millisecond

// ErrNoProbeNeeded is returned by AllowProbe when the breaker admits calls (closed or
// forced closed): there is nothing to probe.
var ErrNoProbeNeeded = errors.New("breaker: closed; no probe needed")

// AllowNoProbe is Allow for a call that must never be the probe, such as a mutation.
// It admits exactly when Allow would admit an ordinary call; where Allow would end the
// open period or hand out a half-open probe slot, it refuses with an *OpenError whose
// WaitsForProbe is set, and leaves the slot to a call that may probe (a read-only
// call of the same dependency, or the attached prober). It takes no lock and
// allocates nothing while the breaker is closed.
func (b *Breaker) AllowNoProbe() (Permit, error) {
	sg := b.loadSG()
	if sg&slowPathBits == 0 {
		return Permit{b: b, sg: sg}, nil
	}
	if State(sg & stateMask).Admits() {
		return Permit{b: b, sg: sg, n: b.preciseNanos()}, nil
	}
	return b.allowSlow(sg, b.nanos(), true, allowNoProbe)
}

// AllowProbe is the attached prober's way in: it returns a probe permit when a probe
// may go now (the probe interval is over, or a half-open slot is free, and in fleet
// mode this replica holds the probe lease). It returns ErrNoProbeNeeded when the
// breaker admits calls, and an *OpenError whose Until says when to ask again
// otherwise. Report the probe's outcome through the permit like any call's: a success
// closes the breaker (once HalfOpenProbes probes succeeded), a failure reopens it for
// another probe interval, and a probe that never reports loses its slot when its
// ProbeLease runs out.
//
// AllowProbe works without AttachProber too (a caller running its own health check
// on a breaker that user calls may also probe), but then a user's call may take the
// slot first.
func (b *Breaker) AllowProbe() (Permit, error) {
	return b.AllowProbeAt(b.now())
}

// AllowProbeAt is AllowProbe with the time given by the caller.
func (b *Breaker) AllowProbeAt(now time.Time) (Permit, error) {
	n := b.toNanos(now)
	if pl := b.prober.Load(); pl != nil {
		pl.seen.Store(n)
	}
	switch State(b.loadSG() & stateMask) {
	case Closed, ForcedClosed:
		return Permit{}, ErrNoProbeNeeded
	case ForcedOpen:
		return b.rejection() // an operator decides; probes would change nothing
	}
	p, err := b.acquire(n, allowProber)
	if err == nil && !p.IsProbe() {
		// It closed while we waited for the lock.
		p.Ignore()
		return Permit{}, ErrNoProbeNeeded
	}
	return p, err
}

// AttachProber hands half-open to a prober that probes at least every maxEvery: from
// now on user calls never probe, and the open period is Policy.Cooldown without
// growth (CooldownMultiplier is not applied: a health probe is cheap), or maxEvery
// when that is shorter, stretched by Policy.Jitter and floored by any delay the
// dependency stated. An open period already running keeps its end. At most one prober
// may be attached; maxEvery must be at least 10ms.
func (b *Breaker) AttachProber(maxEvery time.Duration) error {
	if maxEvery < minProbeEvery {
		return &ConfigError{Package: "breaker", Field: "AttachProber.maxEvery", Value: maxEvery, Problem: "must be at least 10ms"}
	}
	pl := &proberLink{every: int64(maxEvery)}
	pl.seen.Store(b.preciseNanos())
	if !b.prober.CompareAndSwap(nil, pl) {
		return fmt.Errorf("breaker: %s already has a prober attached", b.name)
	}
	return nil
}

// proberLink is the breaker's side of its prober.
type proberLink struct {
	every int64        // the longest open period between probes, in nanoseconds
	seen  atomic.Int64 // when the prober last asked for a probe (breaker nanos)
}

// proberActive reports whether an attached prober owns half-open at now: it has
// asked for a probe within one interval and one ProbeLease of the later of its last
// request and the end of the open period. A prober that stopped (its Run returned,
// its goroutine is stuck) thus hands probing back to user calls instead of leaving
// the breaker open for good.
func (b *Breaker) proberActive(now int64) bool {
	pl := b.prober.Load()
	if pl == nil {
		return false
	}
	since := max(pl.seen.Load(), b.reopenAt.Load())
	return now-since <= pl.every+int64(b.pol.Load().ProbeLease)
}

// DetachProber gives half-open back to user calls.
func (b *Breaker) DetachProber() { b.prober.Store(nil) }

// HasProber reports whether a prober is attached.
func (b *Breaker) HasProber() bool { return b.prober.Load() != nil }

// ProbePolicy returns the policy with the open period a breaker with a prober uses:
// Cooldown bounded by the prober's interval, and no growth. Without a prober it is
// Policy(). Fleet mode computes the fleet's open periods from it.
func (b *Breaker) ProbePolicy() Policy {
	p := *b.pol.Load()
	if pl := b.prober.Load(); pl != nil {
		p.Cooldown = min(p.Cooldown, time.Duration(pl.every))
		p.CooldownMultiplier = 1
	}
	return p
}

// noProbeRejection refuses a call that may not probe, in state st at now (no lock
// held). Before the open period ends the breaker's own rejection says when the next
// probe may go; after it, the call waits for a probe, and the error says so.
func (b *Breaker) noProbeRejection(st State, now int64) (Permit, error) {
	if st == Open && b.reopenAt.Load() > now {
		return b.rejection()
	}
	e := &OpenError{Breaker: b.name, State: st, WaitsForProbe: true, now: b.now}
	if pb := b.probeBusy.Load(); st == HalfOpen && pb > now {
		e.Until, e.span = b.toTime(pb), b.pol.Load().ProbeLease
	}
	return Permit{}, e
}
