package breaker

import "time"

// Event is one state change of a breaker. When From equals To (open), the dependency
// asked for a longer pause and ReopenAt moved later.
type Event struct {
	Breaker       string
	PolicyVersion string
	From, To      State
	Cause         Cause
	// Reason is the cause in words for a person reading a log, for example
	// "failure rate 60% over 20 calls ≥ 50%" or "forced open by operator: deploy".
	Reason string
	At     time.Time
	// ReopenAt is when the next probe may go, when To is Open.
	ReopenAt time.Time
	// Generation counts the breaker's transitions; events of one breaker can be ordered by it.
	Generation uint64
	// Window holds the calls measured when the event happened.
	Window Counts
	// HealthProbe is set when the transition was made by the breaker's attached prober
	// (package probe): its health probe started (open to half-open) or settled
	// (half-open to closed or open). It is unset for a user call's probe.
	HealthProbe bool
}

// emit queues an event under the lock; deliver hands it to the listeners after unlocking.
func (b *Breaker) emit(now int64, from, to State, cause Cause, reason string) {
	if len(b.listeners) == 0 {
		return
	}
	e := Event{
		Breaker:       b.name,
		PolicyVersion: b.pol.Load().Version,
		From:          from,
		To:            to,
		Cause:         cause,
		Reason:        reason,
		At:            b.toTime(now),
		Generation:    b.loadSG() >> genShift,
		Window:        b.win.sums(),
		HealthProbe:   b.emitHealth,
	}
	if to == Open {
		e.ReopenAt = b.toTime(b.reopenAt.Load())
	}
	b.pending = append(b.pending, e)
}

// deliver hands queued events to the listeners, outside the lock and in order. Only one
// goroutine delivers at a time; others leave their events to it and go on, so a
// transition never makes a second caller wait for a listener.
func (b *Breaker) deliver() {
	if len(b.listeners) == 0 {
		return
	}
	b.mu.Lock()
	if b.delivering || len(b.pending) == 0 {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.pending) > 0 {
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		b.call(batch)
		b.mu.Lock()
	}
	b.delivering = false
	b.mu.Unlock()
}

func (b *Breaker) call(batch []Event) {
	defer func() {
		if r := recover(); r != nil {
			// A listener panicked: let the next delivery start, then re-panic so the
			// bug is seen where it happened.
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
			panic(r)
		}
	}()
	for _, e := range batch {
		for _, l := range b.listeners {
			l(e)
		}
	}
}
