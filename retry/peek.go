package retry

import "time"

// Peeks: what the next attempt would be told, asked without charging anything. A
// caller that decides for itself whether to repeat a failed call (a workflow
// scheduler's retry predicate, package workflowguard) asks them before it repeats.

// Allows reports whether one more retry would be granted now, without charging it.
func (b *Budget) Allows() bool { return b.allowsAt(b.clk.Now()) }

// allowsAt is Allows at the given time.
func (b *Budget) allowsAt(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	requests, retries := b.sum(b.index(now))
	return (retries+1)*1e6 <= b.allowedLocked(requests) // TryRetryAt's comparison
}

// NextRefusal returns the reason the operation's next attempt would be refused with
// now, or "" when it would be admitted. It charges nothing and records nothing; the
// answer can change before the attempt is asked for (another caller's retry may take
// the budget's last token). An operation that succeeded returns ReasonSucceeded.
func (run *Run) NextRefusal() Reason {
	now := run.r.clk.Now()
	run.mu.Lock()
	defer run.mu.Unlock()
	switch {
	case run.stopped != "":
		return run.stopped
	case run.inFlight:
		return ReasonInFlight
	case !now.Before(run.deadline):
		return ReasonDeadlineExhausted
	case run.attempts > 0 && !run.retryGranted:
		return ReasonNotRetryable
	case run.attempts > 0 && run.chargeOnAdmit && !run.budget.allowsAt(now):
		return ReasonBudgetExhausted
	}
	return ""
}

// Tracked returns the operation Track keeps under key for the invocation, or nil. It
// creates nothing.
func (r *Retrier) Tracked(invocationID string, key Key) *Run {
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	return r.tracked[invocationID][key]
}
