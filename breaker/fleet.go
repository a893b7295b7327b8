package breaker

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/fleetlink"
)

// Fleet mode (package fleet) shares a breaker's state across replicas through Redis. The
// per-call path stays local: these hooks let the fleet's sync loop read the breaker's
// window and apply the fleet's state between calls. While the fleet holds a breaker
// (its last sync is recent), a breaker whose cooldown has ended does not send a probe
// of its own: only the replica holding the fleet's probe lease does. When the hold runs
// out (Redis unreachable), the breaker decides alone, exactly as without a fleet.

// fleetLink is a breaker's side of its fleet. Fields without a comment are guarded by
// the breaker's lock.
type fleetLink struct {
	hold     atomic.Int64 // breaker nanos until which the fleet decides; 0 = never
	want     atomic.Bool  // a call was held back for the probe lease since the last read
	wake     func()
	deferFor int64 // how long a held-back call is told to wait

	adopting bool  // applying the fleet's state: not a change to publish
	dirty    bool  // changed by itself since the last apply
	cause    Cause // that change's cause
	budget   int   // probes this replica may still send in the fleet's half-open period
}

func init() {
	fleetlink.Attach = func(v any, wake func()) error { return v.(*Breaker).fleetAttach(wake) }
	fleetlink.Detach = func(v any) { v.(*Breaker).fleetDetach() }
	fleetlink.Read = func(v any) fleetlink.Report { return v.(*Breaker).fleetRead() }
	fleetlink.Apply = func(v any, a fleetlink.Adopt) bool { return v.(*Breaker).fleetApply(a) }
}

func (b *Breaker) fleetAttach(wake func()) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fleet != nil {
		return errors.New("breaker: " + b.name + " is already attached to a fleet")
	}
	b.fleet = &fleetLink{wake: wake}
	return nil
}

func (b *Breaker) fleetDetach() {
	b.mu.Lock()
	b.fleet = nil
	b.mu.Unlock()
}

// fleetHeld reports whether the fleet decides for the breaker at now. Lock held.
func (b *Breaker) fleetHeld(now int64) bool {
	return b.fleet != nil && now < b.fleet.hold.Load()
}

// fleetNoted is called by every transition, lock held: a change the breaker made by
// itself is published at the next sync, which it asks for at once.
func (b *Breaker) fleetNoted(cause Cause) {
	if f := b.fleet; f != nil && !f.adopting {
		f.dirty, f.cause = true, cause
		f.wake()
	}
}

// fleetDefers holds back a call that would end the cooldown with a probe of its own
// while the fleet decides (lock held, state open, cooldown over): the probe belongs to
// the replica holding the fleet's lease. The call is rejected with a short wait, and
// the fleet is asked to sync so this replica can bid for the lease.
func (b *Breaker) fleetDefers(now int64) bool {
	if !b.fleetHeld(now) {
		return false
	}
	f := b.fleet
	f.want.Store(true)
	f.wake()
	b.reopenAt.Store(now + f.deferFor)
	b.openSpan.Store(f.deferFor)
	b.rejectWith(b.newOpenError(Open, now+f.deferFor, f.deferFor))
	return true
}

// fleetProbeOK reports whether a half-open breaker with a free slot may send a probe
// (lock held): always when it decides alone, and while the fleet decides only within
// the probes its lease granted. It takes one from the budget when it says yes.
func (b *Breaker) fleetProbeOK(now int64) bool {
	if !b.fleetHeld(now) {
		return true
	}
	f := b.fleet
	if f.budget > 0 {
		f.budget--
		return true
	}
	b.probeBusy.Store(now + f.deferFor)
	b.rejectWith(b.newOpenError(HalfOpen, now+f.deferFor, int64(b.pol.Load().ProbeLease)))
	return false
}

func (b *Breaker) fleetRead() fleetlink.Report {
	now := b.preciseNanos()
	b.mu.Lock()
	defer b.mu.Unlock()
	sg := b.loadSG()
	st := State(sg & stateMask)
	if st.Admits() {
		b.win.advance(now, b.stripes, tagOf(sg))
		b.win.fold(b.stripes, tagOf(sg))
		b.publishEnd(st)
	}
	c := b.win.sums()
	r := fleetlink.Report{
		LocalGen: sg >> genShift,
		State:    uint8(st),
		Calls:    c.Calls,
		Failures: c.Failures,
		Slow:     c.SlowCalls,
	}
	if b.hasNotBefore && b.notBefore > now {
		r.NotBefore = time.Duration(b.notBefore - now)
	}
	if f := b.fleet; f != nil {
		r.Dirty, r.Cause = f.dirty, uint8(f.cause)
		r.Want = f.want.Swap(false)
	}
	return r
}

func (b *Breaker) fleetApply(a fleetlink.Adopt) bool {
	now := b.preciseNanos()
	b.mu.Lock()
	f := b.fleet
	if f == nil {
		b.mu.Unlock()
		return false
	}
	f.hold.Store(now + int64(a.Hold))
	f.deferFor = int64(a.Defer)
	if b.loadSG()>>genShift != a.IfLocalGen {
		b.mu.Unlock()
		return false
	}
	f.dirty = false
	f.adopting = true
	to, cur := State(a.State), b.State()
	wait := max(int64(a.ReopenIn), 0)
	switch {
	case a.NewPeriod || cur != to:
		if to == Open {
			if cur != Open {
				b.openedAt, b.everOpened = now, true
			}
			b.reopenAt.Store(now + wait)
			b.openSpan.Store(wait)
			b.rejectWith(b.newOpenError(Open, now+wait, wait))
		}
		b.transition(now, to, Cause(a.Cause), a.Reason)
		if to == HalfOpen {
			f.budget = a.Probes
		}
	case to == Open && wait > 0 && absDiff(now+wait, b.reopenAt.Load()) > int64(fleetReopenSlack):
		// The same open period, its end moved (a server-stated delay on some replica).
		b.reopenAt.Store(now + wait)
		b.openSpan.Store(wait)
		b.rejectWith(b.newOpenError(Open, now+wait, wait))
	}
	b.failedProbes = int32(a.FailedProbes)
	f.adopting = false
	b.mu.Unlock()
	b.deliver()
	return true
}

// fleetReopenSlack is how far the fleet's reopen time may differ from the breaker's
// before the breaker follows it: round trips make every reading a little late.
const fleetReopenSlack = 20 * time.Millisecond

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
