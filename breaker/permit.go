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
	p.ReportAt(p.b.now(), r)
}

// ReportAt is Report with the time given by the caller.
func (p *Permit) ReportAt(now time.Time, r Report) {
	b := p.b
	if b == nil {
		return
	}
	p.b = nil
	at := b.toNanos(now)
	if r.Verdict == Success && p.sg&slowPathBits == 0 {
		b.successAt(p.sg, at)
		return
	}
	b.report(p.sg, p.n, at, r)
}

// success is the hot path: an untimed, ordinary call of the current generation.
func (b *Breaker) success(sg uint64, n int64) {
	if b.loadSG() != sg {
		return
	}
	var now int64
	if b.clk == nil {
		now = clock.CoarseNanos()
	} else {
		now = b.clockNanos()
	}
	if sg&slowPathBits != 0 { // a probe, or a timed call
		b.report(sg, n, now, Report{Verdict: Success})
		return
	}
	if now >= b.bucketEnd.Load() {
		b.rotate(now)
	}
	b.stripes.add()
}

func (b *Breaker) successAt(sg uint64, now int64) {
	if b.loadSG() != sg {
		return
	}
	if now >= b.bucketEnd.Load() {
		b.rotate(now)
	}
	b.stripes.add()
}

// rotate slides the window when a bucket ended. If another goroutine holds the lock the
// success goes into the stripes anyway and is folded with the next rotation.
func (b *Breaker) rotate(now int64) {
	if !b.mu.TryLock() {
		return
	}
	if State(b.loadSG() & stateMask).Admits() {
		b.win.advance(now, b.stripes)
		b.bucketEnd.Store(b.win.end())
	}
	b.mu.Unlock()
}

// report handles everything but the plain success: failures, slow calls, ignored calls
// and probes.
func (b *Breaker) report(sg uint64, n, now int64, r Report) {
	probe := State(sg&stateMask) == HalfOpen
	if !probe && r.Verdict == Ignore {
		return
	}
	b.mu.Lock()
	if b.loadSG() != sg {
		// A report from an earlier generation says nothing about the present, except
		// that the dependency may have asked to be left alone for longer.
		if r.Verdict == Failure && r.RetryAfter > 0 && b.State() == Open {
			b.extendOpen(now, r.RetryAfter)
		}
		b.mu.Unlock()
		b.deliver()
		return
	}
	if probe {
		b.reportProbe(uint64(n), now, r)
	} else {
		b.measure(now, r, b.slowNanos > 0 && r.Verdict != Ignore && now-n >= b.slowNanos)
	}
	b.mu.Unlock()
	b.deliver()
}

// measure records an ordinary call and trips the breaker when a gate is crossed.
func (b *Breaker) measure(now int64, r Report, slow bool) {
	b.win.advance(now, b.stripes)
	b.bucketEnd.Store(b.win.end())
	failed := r.Verdict == Failure
	b.win.add(failed, slow)
	if b.State() != Closed || (!failed && !slow) {
		return // forced closed measures but never trips; a fast success cannot trip
	}
	c := b.win.counts(b.stripes)
	if c.Calls < int64(b.policy.MinimumCalls) {
		return
	}
	switch {
	case failed && c.Failures*1e6 >= b.rateMicro*c.Calls:
		b.open(now, CauseFailureRate, fmt.Sprintf("failure rate %s over %d calls ≥ %s",
			percent(c.Failures, c.Calls), c.Calls, percentOf(b.policy.FailureRateThreshold)), r.RetryAfter)
	case slow && c.SlowCalls*1e6 >= b.slowMicro*c.Calls:
		b.open(now, CauseSlowCallRate, fmt.Sprintf("slow-call rate %s over %d calls ≥ %s (slow means ≥ %s)",
			percent(c.SlowCalls, c.Calls), c.Calls, percentOf(b.policy.SlowCallRateThreshold), b.policy.SlowCallThreshold), r.RetryAfter)
	}
}

// reportProbe settles one half-open probe.
func (b *Breaker) reportProbe(token uint64, now int64, r Report) {
	slot := -1
	for i := range b.leases {
		if b.leases[i].token == token {
			slot = i
			break
		}
	}
	if slot < 0 {
		return // the lease ran out and the slot went to another probe
	}
	start := b.leases[slot].deadline - int64(b.policy.ProbeLease)
	slow := b.slowNanos > 0 && r.Verdict != Ignore && now-start >= b.slowNanos
	b.leases[slot] = lease{}
	switch {
	case r.Verdict == Ignore:
		b.admitted--
		b.updateProbeBusy()
	case r.Verdict == Failure:
		b.failedProbes++
		b.open(now, CauseProbeFailed, "probe failed", r.RetryAfter)
	case slow:
		b.failedProbes++
		b.open(now, CauseProbeFailed, fmt.Sprintf("probe too slow (%s ≥ %s)",
			time.Duration(now-start), b.policy.SlowCallThreshold), r.RetryAfter)
	default:
		b.succeeded++
		if b.succeeded >= len(b.leases) {
			reason := "probe succeeded"
			if len(b.leases) > 1 {
				reason = fmt.Sprintf("all %d probes succeeded", len(b.leases))
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
