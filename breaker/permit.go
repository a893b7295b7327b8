package breaker

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// Verdict says how one call bears on the dependency's health.
type Verdict uint8

const (
	// Success: the dependency answered as it should (a 404 or a validation error from a
	// healthy service is a success here).
	Success Verdict = iota + 1
	// Failure: the call counts against the dependency.
	Failure
	// Ignore: the call says nothing about the dependency (the caller cancelled, say).
	// The permit is released and the window is untouched.
	Ignore
)

// Report is the outcome of one call as the breaker needs it.
type Report struct {
	Verdict Verdict
	// RetryAfter is a delay the dependency asked for (Retry-After, RetryInfo). When the
	// breaker opens, or is open, it is a floor on the wait before the next probe.
	RetryAfter time.Duration
}

// Permit is the right to make one call. Report its outcome once with Success, Failure,
// Ignore or Report; later reports through the same Permit are no-ops, and a permit that
// never reports costs nothing (a probe's slot is freed when its lease runs out).
//
// A Permit is a small value. Report through one variable: a copy made before reporting
// would report again. Reports that arrive after the breaker changed state are dropped.
type Permit struct {
	b  *Breaker
	sg uint64 // the breaker's state and generation when the permit was granted
	// n is the probe's lease token when sg is half-open (a probe's start is kept with its
	// lease), otherwise when the call started if calls are timed. Three words keep
	// Allow inlinable.
	n int64
}

// IsProbe reports whether this permit is a half-open probe.
func (p *Permit) IsProbe() bool { return p.b != nil && State(p.sg&stateMask) == HalfOpen }

// Valid reports whether the permit was granted and has not reported yet.
func (p *Permit) Valid() bool { return p.b != nil }

// Success reports that the call succeeded.
func (p *Permit) Success() {
	// Kept small enough to inline; success sorts out probes and timed calls.
	if b := p.b; b != nil {
		p.b = nil
		b.success(p.sg, p.n)
	}
}

// Failure reports that the call failed in a way that counts against the dependency.
func (p *Permit) Failure() { p.Report(Report{Verdict: Failure}) }

// Ignore releases the permit without measuring the call.
func (p *Permit) Ignore() { p.Report(Report{Verdict: Ignore}) }

// Report reports the call's outcome.
func (p *Permit) Report(r Report) {
	if p.b == nil {
		return
	}
	b := p.b
	if r.Verdict == Success && p.sg&slowPathBits == 0 && r.RetryAfter <= 0 {
		p.b = nil
		b.success(p.sg, p.n) // the lock-free path, on the coarse clock
		return
	}
	p.ReportAt(b.now(), r)
}

// ReportAt is Report with the time given by the caller.
func (p *Permit) ReportAt(now time.Time, r Report) {
	b := p.b
	if b == nil {
		return
	}
	p.b = nil
	at := b.toNanos(now)
	if r.Verdict == Success && p.sg&slowPathBits == 0 && r.RetryAfter <= 0 {
		if b.current(p.sg) {
			b.successAt(p.sg, at)
		}
		return
	}
	b.report(p.sg, p.n, at, r)
}

// success is the hot path: an untimed, ordinary call of the current generation.
func (b *Breaker) success(sg uint64, n int64) {
	if !b.current(sg) {
		return
	}
	if sg&slowPathBits != 0 { // a probe, or a timed call
		b.report(sg, n, b.preciseNanos(), Report{Verdict: Success})
		return
	}
	var now int64
	if b.clk == nil {
		now = clock.CoarseNanos()
	} else {
		now = b.clockNanos()
	}
	// successAt, written out: one call less on the hottest path.
	if now >= b.bucketEnd.Load() {
		// Under the lock this success slides the window and may trip the breaker: a
		// decision, so it reads the clock precisely (the coarse reading may lag it by a
		// tick, and a trip would date the open period, and its end, that much early).
		b.successLocked(sg, b.preciseNanos())
		return
	}
	hook(hookSuccessAfterGenCheck)
	if c := b.stripes.add(tagOf(sg)); c%clock.RefreshEvery == 0 && b.clk == nil {
		refreshClock()
	}
}

// successAt counts a success of generation sg (already checked) at now: on the stripes
// while now is inside the current bucket and no success could trip the breaker,
// otherwise under the lock.
func (b *Breaker) successAt(sg uint64, now int64) {
	if now >= b.bucketEnd.Load() {
		b.successLocked(sg, now)
		return
	}
	hook(hookSuccessAfterGenCheck)
	if c := b.stripes.add(tagOf(sg)); c%clock.RefreshEvery == 0 && b.clk == nil {
		// Busy callers keep the coarse clock fresh even when its ticker is starved.
		refreshClock()
	}
}

// successLocked counts a success under the lock: the window slides first (the stripes
// are folded into the bucket they belong to before this success is added), and the gates
// are evaluated, since this success may bring the window to MinimumCalls.
func (b *Breaker) successLocked(sg uint64, now int64) {
	b.mu.Lock()
	if !b.current(sg) {
		b.mu.Unlock()
		return
	}
	b.measure(sg, now, Report{Verdict: Success}, false)
	b.mu.Unlock()
	b.deliver()
}

// report handles everything but the lock-free success: failures, slow calls, ignored
// calls, probes and server-stated delays.
func (b *Breaker) report(sg uint64, n, now int64, r Report) {
	probe := State(sg&stateMask) == HalfOpen
	if !probe && r.Verdict == Ignore && r.RetryAfter <= 0 {
		return
	}
	b.mu.Lock()
	b.clamp(now)
	if r.RetryAfter > 0 {
		// Whatever the generation: a stated delay holds even when the report is stale.
		b.noteRetryAfter(now, r.RetryAfter)
	}
	if b.current(sg) {
		switch {
		case probe:
			b.reportProbe(uint64(n), now, r)
		case r.Verdict != Ignore:
			b.measure(sg, now, r, b.slowNanos() > 0 && now-n >= b.slowNanos())
		}
	}
	b.mu.Unlock()
	b.deliver()
}

// measure records an ordinary call of generation sg (checked, lock held), then evaluates
// the gates: after every measured call in the closed state, the breaker trips when the
// window holds at least MinimumCalls calls and the failure rate or the slow-call rate
// reaches its threshold.
func (b *Breaker) measure(sg uint64, now int64, r Report, slow bool) {
	tag := tagOf(sg)
	b.win.advance(now, b.stripes, tag)
	b.win.fold(b.stripes, tag)
	b.win.add(r.Verdict == Failure, slow)
	st := State(sg & stateMask)
	if st == Closed && b.evaluate(now) {
		return
	}
	b.publishEnd(st)
}

// evaluate trips the breaker when both gates are crossed, and reports whether it did.
// The stripes must have been folded.
func (b *Breaker) evaluate(now int64) bool {
	c := b.win.sums()
	if c.Calls < b.minCalls() {
		return false
	}
	p := b.pol.Load()
	switch {
	case rateReached(c.Failures, c.Calls, p.FailureRateThreshold):
		b.open(now, CauseFailureRate, fmt.Sprintf("failure rate %s over %d calls ≥ %s",
			percent(c.Failures, c.Calls), c.Calls, percentOf(p.FailureRateThreshold)))
	case b.slowNanos() > 0 && rateReached(c.SlowCalls, c.Calls, p.SlowCallRateThreshold):
		b.open(now, CauseSlowCallRate, fmt.Sprintf("slow-call rate %s over %d calls ≥ %s (slow means ≥ %s)",
			percent(c.SlowCalls, c.Calls), c.Calls, percentOf(p.SlowCallRateThreshold), p.SlowCallThreshold))
	default:
		return false
	}
	return true
}

// reportProbe settles one half-open probe. A probe whose lease ran out before it
// reported has lost its slot: its report is dropped (a stated delay in it still counts).
func (b *Breaker) reportProbe(token uint64, now int64, r Report) {
	b.expireLeases(now)
	slot := -1
	for i := range b.leases {
		if b.leases[i].token == token {
			slot = i
			break
		}
	}
	if slot < 0 {
		return // the lease ran out
	}
	start := b.leases[slot].start
	health := token&healthToken != 0
	b.emitHealth = health // the events this report causes say whose probe it was
	defer func() { b.emitHealth = false }()
	slow := b.slowNanos() > 0 && r.Verdict != Ignore && now-start >= b.slowNanos()
	b.leases[slot] = lease{}
	switch {
	case r.Verdict == Ignore:
		b.admitted--
		b.updateProbeBusy()
	case r.Verdict == Failure:
		b.failedProbes++
		if health {
			b.open(now, CauseProbeFailed, "health probe failed")
		} else {
			b.open(now, CauseProbeFailed, "probe failed")
		}
	case slow:
		b.failedProbes++
		b.open(now, CauseProbeFailed, fmt.Sprintf("probe too slow (%s ≥ %s)",
			time.Duration(now-start), b.pol.Load().SlowCallThreshold))
	default:
		b.succeeded++
		if int(b.succeeded) >= len(b.leases) {
			reason := "probe succeeded"
			if len(b.leases) > 1 {
				reason = fmt.Sprintf("all %d probes succeeded", len(b.leases))
			}
			if health {
				reason = "health " + reason
			}
			b.transition(now, Closed, CauseProbeSucceeded, reason)
			return
		}
		b.updateProbeBusy()
	}
}

func percent(n, of int64) string {
	if of == 0 {
		return "0%"
	}
	return percentOf(float64(n) / float64(of))
}

func percentOf(r float64) string {
	s := fmt.Sprintf("%.1f", r*100)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + "%"
}
