package adaptivelimit

import "math"

// update recomputes the limit when an update is due. The caller read due; the lock is
// only tried, so a call that finds another update running goes on at once.
//
// A drain is an update that a stripe's sample fields asked for early, before they could
// overflow: it runs whenever it gets the lock and takes the samples however few.
func (l *Limiter) update(now int64, drain bool) {
	if !l.mu.TryLock() {
		return
	}
	defer l.mu.Unlock()
	if now < l.due.Load() && !drain {
		return // another update ran first
	}
	c := l.cfg.Load()
	l.due.Store(now + int64(c.UpdateInterval))
	if !l.started {
		// The first call: it starts the timeline (see New), nothing to compute yet.
		l.started = true
		return
	}
	nl := float64(l.noLoad.Load())
	tol := 1 + c.Tolerance
	age := l.stalled(now)
	overdue := nl > 0 && age > 2*nl*tol
	if l.sampleCount() < int64(c.MinSamples) && !overdue && !drain {
		return // too few samples: keep them for the next update
	}
	sum, n := l.takeSamples()
	used := l.inUse.Load()
	l.seen = 0
	least := l.sampleMin.Swap(math.MaxInt64)
	nl = l.noLoadLatency(now, nl, least)
	if nl == 0 {
		return // nothing succeeded yet: nothing to compare latency with
	}
	l.noLoad.Store(int64(nl))

	sample, stall := age, age > 0
	if n > 0 {
		if mean := float64(sum) / float64(n); mean >= age {
			sample, stall = mean, false
		}
	}
	l.limitF = l.nextLimit(nl, nl*tol, sample, stall, used)
	eff := int64(math.Round(l.limitF))
	// In use from here on if half of the new limit is in flight already.
	l.half.Store(halfOf(l.limitF))
	l.inUse.Store(false)
	l.noteUse()
	l.setLimit(l.heldLimit(now, eff))
}

// takeSamples empties the stripes' sample fields and returns the sum of their
// latencies, in ns, and how many there were. The caller holds l.mu.
func (l *Limiter) takeSamples() (sum, n int64) {
	for i := range l.stripes {
		w := l.stripes[i].samples.Swap(0)
		n += int64(w >> 40)
		sum += int64(w&sampleMask) << sampleShift
	}
	return sum, n
}

// noLoadLatency returns the no-load latency, in ns, given the last one, nl, and the
// fastest success since the last update, least: a measurement that is complete
// replaces nl, and a success faster than it lowers it. 0 means nothing succeeded yet.
// The caller holds l.mu.
func (l *Limiter) noLoadLatency(now int64, nl float64, least int64) float64 {
	c := l.cfg.Load()
	if l.measuring.Load() && l.measureN.Load() >= int64(c.MinSamples) {
		// The measurement is complete: its minimum is the no-load latency, higher or
		// lower than the last one.
		nl = float64(l.measureMin.Load())
		l.measuring.Store(false)
		l.measured, l.refresh = true, now+int64(c.NoLoadInterval)
	}
	if least < math.MaxInt64 && (nl == 0 || float64(least) < nl) {
		// A call that succeeded this fast shows the dependency can answer this fast:
		// the no-load latency is never above it.
		if !l.measured {
			l.measured, l.refresh = true, now+int64(c.NoLoadInterval)
		}
		nl = float64(least)
	}
	return nl
}

// nextLimit returns the limit after an update, within MinLimit and MaxLimit, from the
// no-load latency nl, the target latency, the latency sample (the mean, or how long
// calls have been stalled if stall) and whether the limit was in use. The caller holds
// l.mu.
func (l *Limiter) nextLimit(nl, target, sample float64, stall, used bool) float64 {
	limit := l.limitF
	switch {
	case sample > target:
		// Above the target: the limit falls in proportion (Envoy's gradient). A mean
		// falls at most by half per update, since a window of a few calls is noisy; a
		// stall is not clamped: calls known to be in flight that long with none
		// ending is no noise, and a hang is what the limit must cut fastest.
		cut := target / sample
		if !stall {
			cut = max(0.5, cut)
		}
		limit *= cut
	case used:
		// At or under the target and the limit in use: it rises by up to its square
		// root (Envoy's headroom), so it grows fast from a small limit and gently from
		// a large one. The rise is the square root in full at the no-load latency and
		// shrinks to none at the target, in proportion: a limit whose calls already
		// queue a little does not leap past the target to be cut back at the next
		// update (the overshoot that made up the tail of admitted latencies). A limit
		// less than half used is not raised: nothing showed the dependency can take
		// more.
		limit += math.Sqrt(limit) * min(1, (target-sample)/(target-nl))
	}
	c := l.cfg.Load()
	return min(max(limit, float64(c.MinLimit)), float64(c.MaxLimit))
}

// heldLimit returns the limit to enforce given the computed one, eff: while the
// no-load latency is being measured, at most half of the limit the measurement started
// under. It starts a measurement when one is due. The caller holds l.mu.
func (l *Limiter) heldLimit(now, eff int64) int64 {
	c := l.cfg.Load()
	if !l.measuring.Load() && l.measured && now >= l.refresh {
		// Measure the no-load latency again under half the limit, which drains the
		// dependency's queue if the limit crept above its capacity (a windowed minimum
		// taken under a standing queue would only rise with it).
		l.held = max(int64(c.MinLimit), eff/2)
		l.measureMin.Store(math.MaxInt64)
		l.measureN.Store(0)
		l.measureFrom.Store(now)
		l.measuring.Store(true)
	}
	if l.measuring.Load() {
		eff = min(eff, l.held)
	}
	return eff
}

// sampleCount is how many samples the stripes hold.
func (l *Limiter) sampleCount() (n int64) {
	for i := range l.stripes {
		n += int64(l.stripes[i].samples.Load() >> 40)
	}
	return n
}

// stalled returns for how long, in ns, calls are known to have been in flight with none
// ending, 0 while calls end. It is read at update time off the samples' count, so it
// costs the admitted path nothing. A check that finds calls in flight and none ended
// since the check before knows only that they started before it (perhaps just before):
// the stall counts from that check, and the next that finds the same reads how long.
// Counting from the last check that saw a call end instead read a slow trickle of
// calls, where a whole interval often passes with one call in flight and none ending,
// as a hang. A dependency that hangs shows in it long before its calls time out.
func (l *Limiter) stalled(now int64) float64 {
	held, before := l.sampleCount(), l.seen
	l.seen = held
	switch {
	case held != before || l.inFlight() == 0:
		l.quiet = false // a call ended, or none is in flight: no stall
		return 0
	case !l.quiet:
		l.quiet, l.quietFrom = true, now
		return 0
	}
	return float64(now - l.quietFrom)
}
