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
	c := &l.cfg
	l.due.Store(now + int64(c.UpdateInterval))
	if !l.started {
		// The first call: it starts the timeline (see New), nothing to compute yet.
		l.started, l.progress = true, now
		return
	}
	nl := float64(l.noLoad.Load())
	tol := 1 + c.Tolerance
	age := l.stalled(now)
	overdue := nl > 0 && age > 2*nl*tol
	if l.sampleCount() < int64(c.MinSamples) && !overdue && !drain {
		return // too few samples: keep them for the next update
	}
	var sum, n int64
	for i := range l.stripes {
		w := l.stripes[i].samples.Swap(0)
		n += int64(w >> 40)
		sum += int64(w&sampleMask) << sampleShift
	}
	used := l.inUse.Load()
	l.seen = 0
	least := l.sampleMin.Swap(math.MaxInt64)

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
	if nl == 0 {
		return // nothing succeeded yet: nothing to compare latency with
	}
	l.noLoad.Store(int64(nl))

	sample := age
	if n > 0 {
		sample = max(sample, float64(sum)/float64(n))
	}
	target := nl * tol
	limit := l.limitF
	switch {
	case sample > target:
		// Above the target: the limit falls in proportion (Envoy's gradient,
		// clamped at halving per update).
		limit *= max(0.5, target/sample)
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
	l.limitF = min(max(limit, float64(c.MinLimit)), float64(c.MaxLimit))
	eff := int64(math.Round(l.limitF))
	// In use from here on if half of the new limit is in flight already.
	l.half.Store(halfOf(l.limitF))
	l.inUse.Store(false)
	l.noteUse()

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
	l.setLimit(eff)
}

// sampleCount is how many samples the stripes hold.
func (l *Limiter) sampleCount() (n int64) {
	for i := range l.stripes {
		n += int64(l.stripes[i].samples.Load() >> 40)
	}
	return n
}

// stalled returns for how long, in ns, calls have been in flight with none ending: the
// time since the last update that saw a call end (or nothing in flight), 0 while calls
// end. A dependency that hangs shows in it long before its calls time out, and it costs
// the admitted path nothing: it is read off the samples' count, at update time, so to
// within an update interval.
func (l *Limiter) stalled(now int64) float64 {
	held := l.sampleCount()
	if held != l.seen || l.inFlight() == 0 {
		l.progress = now
	}
	l.seen = held
	return float64(now - l.progress)
}
