package breaker

// Shadow reports whether the policy in force is in shadow mode ([Policy.Shadow]): its
// decisions are recorded, not enforced. A nil breaker enforces nothing and is not in
// shadow. It takes no lock and allocates nothing.
func (b *Breaker) Shadow() bool { return b != nil && b.pol.Load().Shadow }

// SetPolicy replaces the policy while the breaker runs, or returns a *ConfigError
// naming the first invalid field and changes nothing. Zero fields take defaults, as in
// New.
//
// The breaker keeps its state, its generation and the calls of its window that the new
// window can hold: a time window regrids its buckets by age and drops those older than
// the new span, a count window keeps its newest calls. A window that changes kind (time
// to count or back) starts empty: neither kind knows what the other needs (the order of
// calls, or their age). A running open period keeps its end; the new cooldown applies
// from the next opening. Probes in flight keep their leases while the new
// HalfOpenProbes has room for them. Permits granted before the change still report;
// the new thresholds judge the next measured call. The change itself never trips.
func (b *Breaker) SetPolicy(p Policy) error {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return err
	}
	now := b.preciseNanos()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clamp(now)
	sg := b.loadSG()
	st := State(sg & stateMask)
	if st.Admits() {
		b.win.advance(now, b.stripes, tagOf(sg))
		b.win.fold(b.stripes, tagOf(sg))
	}
	b.win = b.win.resized(p, now)
	if len(b.leases) != p.HalfOpenProbes {
		b.resizeLeases(p.HalfOpenProbes)
	}
	b.pol.Store(&p)
	// The timed bit follows slow-call tracking. Permits compare generations without it
	// (see current), so the calls in flight still report.
	if timed := p.SlowCallThreshold > 0; timed != (sg&timedBit != 0) {
		b.storeSG(sg ^ timedBit)
	}
	if st.Admits() {
		b.publishEnd(st)
	} else if st == HalfOpen {
		b.updateProbeBusy()
	}
	return nil
}

// current reports whether a permit granted on state word sg is of the generation in
// force: the timed bit, which a policy change may flip, is not compared.
func (b *Breaker) current(sg uint64) bool { return (b.loadSG()^sg)&^timedBit == 0 }

// resizeLeases gives the half-open breaker n probe slots, keeping the leases in flight
// that fit; a lease that does not fit is dropped, as if it had run out.
func (b *Breaker) resizeLeases(n int) {
	next := make([]lease, n)
	i := 0
	for _, l := range b.leases {
		if l.token != 0 && i < n {
			next[i] = l
			i++
		}
	}
	b.leases, b.admitted = next, int32(i)
	b.succeeded = min(b.succeeded, int32(n-1))
}

// resized returns the window p asks for, holding what w held that it can: see
// SetPolicy. The stripes must have been folded.
func (w *window) resized(p Policy, now int64) window {
	next := newWindow(p, now)
	switch {
	case next.size > 0 && w.size > 0:
		next.keepNewest(w)
	case next.size == 0 && w.size == 0:
		next.regrid(w)
	}
	return next
}

// keepNewest copies the newest calls of the count window old, as many as w holds.
func (w *window) keepNewest(old *window) {
	n := min(old.total, old.size, w.size)
	oldSlow, slow := old.slowWords(), w.slowWords()
	for i := old.total - n; i < old.total; i++ {
		pos := i % old.size
		word, bit := pos>>6, uint64(1)<<(pos&63)
		failed := old.bits[word]&bit != 0
		isSlow := oldSlow > 0 && old.bits[oldSlow+word]&bit != 0
		w.add(failed, isSlow && slow > 0)
	}
}

// regrid files the buckets of the time window old into w by age: a bucket that started
// k of old's widths before old's current one goes to the bucket k·old.width/w.width
// before w's current one, which starts where old's did; buckets older than w's span are
// dropped. A call thus leaves the new window at most one new bucket later than its age
// says, never earlier.
func (w *window) regrid(old *window) {
	w.curStart = old.curStart
	n := len(old.buckets)
	for k := range n {
		ob := old.buckets[(old.cur-k+n)%n]
		j := int64(k) * old.width / w.width
		if j >= int64(len(w.buckets)) {
			break
		}
		b := &w.buckets[(len(w.buckets)-int(j))%len(w.buckets)]
		b.successes += ob.successes
		b.failures += ob.failures
		b.slow += ob.slow
		w.successes += int64(ob.successes)
		w.failures += int64(ob.failures)
		w.slow += int64(ob.slow)
	}
}
