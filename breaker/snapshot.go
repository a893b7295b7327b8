package breaker

import "time"

// Snapshot is a consistent view of a breaker for metrics, admin pages and payloads.
type Snapshot struct {
	Name          string
	PolicyVersion string
	State         State
	Generation    uint64
	Window        Counts
	// OpenedAt is when the breaker last opened; zero if it never did.
	OpenedAt time.Time
	// RetryAfter is how long until the next probe may go (see Breaker.RetryAfter).
	RetryAfter time.Duration
	// FailedProbes counts consecutive failed probes; it drives cooldown growth.
	FailedProbes int
	// ProbesInFlight counts probe leases that have not reported or run out.
	ProbesInFlight int
	// ExpiredProbes counts probe leases that ran out over the breaker's life.
	ExpiredProbes int64
}

// Snapshot returns the breaker's state and counts now.
func (b *Breaker) Snapshot() Snapshot { return b.snapshotAt(b.now()) }

// snapshotAt is Snapshot with the time given by the caller.
func (b *Breaker) snapshotAt(now time.Time) Snapshot {
	n := b.toNanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clamp(n)
	sg := b.loadSG()
	switch st := State(sg & stateMask); {
	case st.Admits():
		// Slide the window to now, so a dependency that went quiet after an incident
		// stops reporting the incident's failures once they are older than the window.
		b.win.advance(n, b.stripes, tagOf(sg))
		b.win.fold(b.stripes, tagOf(sg))
		b.publishEnd(st)
	case st == HalfOpen:
		b.expireLeases(n) // a lease that ran out is not in flight
	}
	s := Snapshot{
		Name:          b.name,
		PolicyVersion: b.pol.Load().Version,
		State:         State(sg & stateMask),
		Generation:    sg >> genShift,
		Window:        b.win.sums(),
		RetryAfter:    b.retryAfterLocked(n),
		FailedProbes:  int(b.failedProbes),
		ExpiredProbes: int64(b.expired),
	}
	if b.everOpened {
		s.OpenedAt = b.toTime(b.openedAt)
	}
	for _, l := range b.leases {
		if l.token != 0 {
			s.ProbesInFlight++
		}
	}
	return s
}

// RetryAfter is how long until the breaker lets the next call through: the rest of the
// cooldown when open, the time until a probe slot frees when half-open and full, zero
// when closed. It is zero for a forced-open breaker too, whose end nobody knows; check
// the state. Payloads turn it into retry_after_seconds.
func (b *Breaker) RetryAfter() time.Duration { return b.retryAfterAt(b.now()) }

// retryAfterAt is RetryAfter with the time given by the caller.
func (b *Breaker) retryAfterAt(now time.Time) time.Duration {
	return b.retryAfter(b.toNanos(now))
}

func (b *Breaker) retryAfter(now int64) time.Duration {
	d, clamped := b.retryAfterUnclamped(now)
	if !clamped {
		// The clock went backwards past a deadline's span: clamp it, as Allow would, so
		// the answer and the next Allow agree.
		b.mu.Lock()
		b.clamp(now)
		b.mu.Unlock()
		d, _ = b.retryAfterUnclamped(now)
	}
	return d
}

// retryAfterLocked is retryAfter for a caller that holds the lock and has clamped.
func (b *Breaker) retryAfterLocked(now int64) time.Duration {
	d, _ := b.retryAfterUnclamped(now)
	return d
}

// retryAfterUnclamped is the wait until the next call may go, never more than the span
// that was set; ok is false when the deadline lies further than that span.
func (b *Breaker) retryAfterUnclamped(now int64) (d time.Duration, ok bool) {
	var until, span int64
	switch b.State() {
	case Open:
		until, span = b.reopenAt.Load(), b.openSpan.Load()
	case HalfOpen:
		until, span = b.probeBusy.Load(), int64(b.pol.Load().ProbeLease)
	default:
		return 0, true
	}
	if until <= now { // also keeps the "no probe busy" sentinel (MinInt64) from overflowing
		return 0, true
	}
	return time.Duration(min(until-now, span)), until-now <= span
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, as payloads carry it.
func (b *Breaker) RetryAfterSeconds() int64 {
	d := b.RetryAfter()
	return int64((d + time.Second - 1) / time.Second)
}
