package retry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// Run is one logical operation in progress, from Retrier.Start or Retrier.Track. It is
// safe for concurrent use. Attempts are admitted one at a time: Admit while an attempt
// is in flight is refused with ReasonInFlight, so two identical calls issued together
// cannot both go.
type Run struct {
	r        *Retrier
	op       Operation
	pol      Policy
	hash     string
	budget   *Budget
	started  time.Time
	deadline time.Time

	mu             sync.Mutex
	attempts       int  // attempts sent
	inFlight       bool // an attempt was admitted and has not finished
	retryGranted   bool // the last Finish granted a retry that has not been taken
	chargeOnAdmit  bool // the budget is charged when the retry is admitted (Track)
	stopped        Reason
	refusedNext    bool  // attempt attempts+1 was refused and recorded
	stopErr        error // why the operation stopped before sending, when it did
	mayHaveApplied bool  // an attempt ended UNKNOWN and was not proved unapplied
	last           classify.Classification
	lastErr        error
	lastInfo       Info
}

// RequestID returns the operation's request id.
func (run *Run) RequestID() string { return run.op.RequestID }

// IdempotencyKey returns the key every attempt of the operation carries.
func (run *Run) IdempotencyKey() string { return run.op.IdempotencyKey }

// Key returns the operation's key.
func (run *Run) Key() Key { return run.op.Key }

// Deadline returns when the operation's deadline ends.
func (run *Run) Deadline() time.Time { return run.deadline }

// Done reports whether the operation has ended and why.
func (run *Run) Done() (Reason, bool) {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.stopped, run.stopped != ""
}

// Admit asks to make the next attempt. It returns the attempt, whose context must be
// used to send it and whose Finish must be called with its outcome; or a *StopError
// saying why not. Every reason but ReasonInFlight and ReasonCanceled ends the
// operation. The first attempt is counted as one operation in the dependency's retry
// budget; later ones were charged as retries when Finish granted them, or, for an
// operation from Track, are charged here, when the caller really makes the retry.
//
// An operation that ended with ReasonUnknownOutcome is reconciled again when it has a
// Reconciler: once an operator or a status lookup has settled the earlier attempt as
// not applied, the call that asks again is admitted as a retry.
func (run *Run) Admit(ctx context.Context) (*Attempt, error) {
	return run.admit(ctx, admittingState(ctx), true)
}

// AdmitWithState is Admit for a caller that holds the dependency's breaker itself (the
// callbacks plugin): state is the state of the breaker that admitted the call, written
// into the records of attempts refused before they are sent. Unlike
// WithAdmittingState, it leaves ctx as it is, so the hooks (OnAttempt) receive the
// caller's own context: an adk-go tool context keeps its InvocationID and
// FunctionCallID, which telemetry.RetryHook's records carry.
func (run *Run) AdmitWithState(ctx context.Context, state breaker.State) (*Attempt, error) {
	return run.admit(ctx, state.String(), true)
}

// AdmitOutsideBudget is AdmitWithState for a retry whose load another limit already
// bounds: for an operation from Track, whose retries are charged when they are
// admitted, the dependency's retry budget neither refuses nor counts it (an operation
// from Start was charged when Finish granted the retry). The attempt cap, the
// deadline, the in-flight rule and the UNKNOWN rule still apply, and a first attempt
// still counts as an operation started. Package callbacks uses it while
// the dependency's throttle is shedding, for the model's re-issue of a call in a turn
// the dependency has already served: the throttle counts that call among its requests,
// keeps the calls sent to about K per accepted one, retries included, and ranks it
// critical, so the budget refusing it would only leave the turn with part of its data.
func (run *Run) AdmitOutsideBudget(ctx context.Context, state breaker.State) (*Attempt, error) {
	return run.admit(ctx, state.String(), false)
}

// admit admits the next attempt; budgeted says whether a retry is charged to (and may
// be refused by) the retry budget.
func (run *Run) admit(ctx context.Context, admitting string, budgeted bool) (*Attempt, error) {
	if err := ctx.Err(); err != nil {
		return nil, run.refusal(ReasonCanceled, err)
	}
	n, now, err := run.reserve(ctx, admitting, budgeted)
	if err != nil {
		return nil, err
	}
	if n == 1 {
		run.budget.RequestAt(now) // the first attempt: one operation started
	}
	a := &Attempt{run: run, info: run.info(n, now)}
	if err := run.allowBreaker(ctx, a, now); err != nil {
		return nil, err
	}
	if err := run.recordIntent(ctx, a, now); err != nil {
		return nil, err
	}
	run.mu.Lock()
	run.attempts = n
	run.refusedNext = false
	run.mu.Unlock()

	actx := WithIdempotencyKey(ctx, run.op.IdempotencyKey)
	actx = context.WithValue(actx, attemptKey{}, a)
	// The operation's deadline is kept on the Retrier's clock; the attempt's context
	// gets the same remaining time on the system clock.
	a.ctx, a.cancel = context.WithTimeout(actx, run.deadline.Sub(now))
	return a, nil
}

// reserve takes the in-flight slot for the next attempt when the run admits one now,
// and returns the attempt's number and the time it was admitted at. Otherwise it
// returns why not, ending the run and recording the refused attempt where that applies.
// budgeted is admit's.
func (run *Run) reserve(ctx context.Context, admitting string, budgeted bool) (int, time.Time, error) {
	r := run.r
	run.mu.Lock()
	if run.stopped == ReasonUnknownOutcome && run.op.Reconcile != nil && !run.inFlight {
		run.reconcileAgainLocked(ctx)
	}
	if run.stopped != "" {
		// Asked again after the operation ended (the model re-issuing the call): this
		// attempt is refused before it is sent, and recorded as such.
		// The record names the attempt's number once: asking again after that gets the
		// same answer without another record of the same attempt.
		err := run.stopErrorLocked()
		n, why, last, record := run.attempts+1, run.stopped, run.last, !run.refusedNext
		run.refusedNext = true
		run.mu.Unlock()
		if record {
			run.emit(ctx, Event{Attempt: n, Outcome: classify.FailedBeforeSend, ErrorClass: last.Class,
				BreakerState: admitting, Stop: why, At: r.clk.Now()})
		}
		return 0, time.Time{}, err
	}
	if run.inFlight {
		run.mu.Unlock()
		return 0, time.Time{}, run.refusal(ReasonInFlight, nil)
	}
	now := r.clk.Now()
	if run.attempts > 0 && !run.retryGranted {
		// Unreachable through the API: Finish either grants a retry or ends the run.
		run.stopLocked(ReasonNotRetryable, nil)
		err := run.stopErrorLocked()
		run.mu.Unlock()
		return 0, time.Time{}, err
	}
	if !now.Before(run.deadline) {
		return 0, time.Time{}, run.stopBeforeSendLocked(ctx, ReasonDeadlineExhausted, classify.ClassDeadline, admitting, now)
	}
	if run.attempts > 0 && run.chargeOnAdmit && budgeted && !run.budget.TryRetryAt(now) {
		// The caller (the model, for a tracked operation) really asked again: this is
		// the moment a retry happens, so this is where the budget is charged and where
		// it refuses.
		return 0, time.Time{}, run.stopBeforeSendLocked(ctx, ReasonBudgetExhausted, run.last.Class, admitting, now)
	}
	run.inFlight = true
	run.retryGranted = false
	n := run.attempts + 1
	run.mu.Unlock()
	return n, now, nil
}

// stopBeforeSendLocked ends the run with why before the next attempt was sent, and
// records that attempt as refused, with class as its error class. The caller holds
// run.mu; stopBeforeSendLocked unlocks it before recording.
func (run *Run) stopBeforeSendLocked(ctx context.Context, why Reason, class classify.Class, admitting string, now time.Time) error {
	run.stopLocked(why, nil)
	err := run.stopErrorLocked()
	n := run.attempts + 1
	run.refusedNext = true
	run.mu.Unlock()
	run.emit(ctx, Event{Attempt: n, Outcome: classify.FailedBeforeSend, ErrorClass: class,
		BreakerState: admitting, Stop: why, At: now})
	return err
}

// allowBreaker asks the operation's breaker, if it has one, for attempt a, and keeps
// the permit in a. A mutation asks without becoming the probe. A refusal ends the run.
func (run *Run) allowBreaker(ctx context.Context, a *Attempt, now time.Time) error {
	b := run.op.Breaker
	if b == nil {
		return nil
	}
	// A mutation is never the probe. The path also holds the dependency for a delay
	// it stated (a 429's Retry-After), as every other hop does.
	a.call = callpath.Call{Dependency: run.op.Dependency, Tool: run.op.Tool, Breaker: b, NoProbe: run.op.Mutating}
	if r, ok := run.r.path.Admit(ctx, &a.call); !ok {
		c := classify.ForClass(classify.ClassBreakerOpen)
		c.RetryAfter = r.RetryAfter
		return run.refuse(ctx, a, c, ReasonBreakerOpen, r.State.String(), r.Err, now)
	}
	a.admitState = b.State().String()
	return nil
}

// recordIntent records attempt a's dispatch intent in the Retrier's journal, if it has
// one, and keeps the intent's id in a. The caller leaving first undoes the admission
// and leaves the run open; any other journal error ends the run.
func (run *Run) recordIntent(ctx context.Context, a *Attempt, now time.Time) error {
	j := run.r.cfg.Journal
	if j == nil || (run.op.Idempotent && !run.r.cfg.JournalAll) {
		// Only an operation a repeat could harm needs its intent durable: a read-only
		// or idempotent call is safe to send again whatever became of the last one.
		return nil
	}
	id, err := j.Intend(ctx, a.info)
	if err != nil {
		run.r.path.Release(&a.call)
		if ctx.Err() != nil {
			run.abandonAdmitted()
			return run.refusal(ReasonCanceled, ctx.Err())
		}
		c := classify.Classification{Outcome: classify.FailedBeforeSend, Class: classify.ClassUnclassified, Verdict: classify.Neutral}
		return run.refuse(ctx, a, c, ReasonJournalError, a.admitState, fmt.Errorf("retry: dispatch intent not recorded: %w", err), now)
	}
	a.info.IntentID = id
	return nil
}

// abandonAdmitted undoes an admission whose attempt was never sent because the
// caller left: the run stays open, and the retry that admitted it is not lost.
func (run *Run) abandonAdmitted() {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.inFlight = false
	run.retryGranted = run.attempts > 0
}

// refuse ends the run before attempt a was sent and records why.
func (run *Run) refuse(ctx context.Context, a *Attempt, c classify.Classification, why Reason, state string, err error, now time.Time) error {
	run.mu.Lock()
	run.inFlight = false
	run.last = c
	run.lastInfo = a.info
	run.stopLocked(why, err)
	serr := run.stopErrorLocked()
	run.refusedNext = true
	run.mu.Unlock()
	run.emit(ctx, Event{Attempt: a.info.Number, Outcome: c.Outcome, ErrorClass: c.Class, BreakerState: state,
		Stop: why, At: now, Err: err})
	return serr
}

// reconcileAgainLocked asks the Reconciler once more about the attempt that ended the
// run with an UNKNOWN outcome, and reopens the run for a retry when it was not applied.
// Called and returns with run.mu held; releases it while the Reconciler runs.
func (run *Run) reconcileAgainLocked(ctx context.Context) {
	run.inFlight = true
	info := run.lastInfo
	run.mu.Unlock()
	s, err := run.op.Reconcile(ctx, info)
	run.mu.Lock()
	run.inFlight = false
	if err != nil || run.stopped != ReasonUnknownOutcome {
		return
	}
	switch s {
	case Applied:
		run.stopped = ReasonReconciledApplied
	case NotApplied:
		now := run.r.clk.Now()
		if d := run.grantLocked(now, run.last); d.Retry {
			run.mayHaveApplied = false
			run.stopped = ""
			run.retryGranted = true
		} else {
			run.mayHaveApplied = false
			run.stopped = d.Reason
		}
	}
}

// info returns the description of attempt n.
func (run *Run) info(n int, now time.Time) Info {
	return Info{
		Dependency:     run.op.Dependency,
		Tool:           run.op.Tool,
		RequestID:      run.op.RequestID,
		IdempotencyKey: run.op.IdempotencyKey,
		Key:            run.op.Key,
		ArgsHash:       run.hash,
		Args:           run.op.Args,
		Number:         n,
		PolicyVersion:  run.pol.Version,
		Started:        now,
		Deadline:       run.deadline,
	}
}

// decide records attempt info's outcome and decides what comes next.
func (run *Run) decide(ctx context.Context, info Info, c classify.Classification, err error, now time.Time) Decision {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.last, run.lastErr, run.lastInfo = c, err, info
	if c.Outcome == classify.Unknown {
		run.mayHaveApplied = true
	}
	stop := Reason("")
	switch {
	case c.Outcome == classify.Succeeded:
		stop = ReasonSucceeded
	case c.Class == classify.ClassBreakerOpen:
		stop = ReasonBreakerOpen // a lower layer's breaker refused the call
	case ctx.Err() != nil:
		stop = ReasonCanceled
	case !now.Before(run.deadline):
		stop = ReasonDeadlineExhausted
	case c.Outcome == classify.Unknown && c.Retryable && !run.op.Idempotent:
		if run.op.Reconcile == nil {
			stop = ReasonUnknownOutcome
			break
		}
		run.mu.Unlock()
		s, rerr := run.op.Reconcile(ctx, info)
		run.mu.Lock()
		switch {
		case rerr != nil:
			run.lastErr = errors.Join(err, fmt.Errorf("retry: reconcile: %w", rerr))
			stop = ReasonUnknownOutcome
		case s == Applied:
			stop = ReasonReconciledApplied
		case s == NotApplied:
			run.mayHaveApplied = false
		default:
			stop = ReasonUnknownOutcome
		}
	}
	if stop == "" && !c.Retryable {
		stop = ReasonNotRetryable
	}
	run.inFlight = false
	if stop == "" {
		d := run.grantLocked(now, c)
		if d.Retry {
			run.retryGranted = true
			return d
		}
		stop = d.Reason
	}
	run.stopLocked(stop, nil)
	return Decision{Reason: stop}
}

// grantLocked decides whether a retry may follow the failure c and charges it to the
// budget, unless the run charges retries when they are admitted (a tracked operation,
// whose next attempt happens only if the model asks again). Caller holds run.mu.
func (run *Run) grantLocked(now time.Time, c classify.Classification) Decision {
	if run.attempts >= run.pol.MaxAttempts {
		return Decision{Reason: ReasonAttemptsExhausted}
	}
	delay := Backoff(run.attempts-1, run.pol.BaseDelay, run.pol.MaxDelay, run.r.rand())
	if c.RetryAfter > delay {
		delay = c.RetryAfter // the server's stated delay is a floor
	}
	if !now.Add(delay).Before(run.deadline) {
		return Decision{Reason: ReasonDeadlineExhausted}
	}
	if !run.chargeOnAdmit && !run.budget.TryRetryAt(now) {
		return Decision{Reason: ReasonBudgetExhausted}
	}
	return Decision{Retry: true, Delay: delay}
}

// stopLocked ends the run, keeping the first reason. Caller holds run.mu.
func (run *Run) stopLocked(why Reason, err error) {
	if run.stopped != "" {
		return
	}
	run.stopped = why
	run.stopErr = err
	run.retryGranted = false
}

// abandon ends the run from outside an attempt (the caller's context ended while
// waiting to retry).
func (run *Run) abandon(why Reason, err error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.attempts == 0 && run.last.Outcome == 0 {
		run.last = classify.ForClass(classify.ClassCanceled)
		run.last.Outcome = classify.FailedBeforeSend
	}
	run.stopLocked(why, err)
}

func (run *Run) stopErrorLocked() *StopError {
	return &StopError{Reason: run.stopped, Dependency: run.op.Dependency, Attempts: run.attempts,
		RetryAfter: run.last.RetryAfter, Err: run.stopErr}
}

// refusal is a StopError that does not end the run.
func (run *Run) refusal(why Reason, err error) *StopError {
	run.mu.Lock()
	defer run.mu.Unlock()
	return &StopError{Reason: why, Dependency: run.op.Dependency, Attempts: run.attempts, Err: err}
}

// Result returns where the operation stands; once it is done the Result is final.
func (run *Run) Result() Result {
	run.mu.Lock()
	defer run.mu.Unlock()
	res := Result{
		Reason:         run.stopped,
		Last:           run.last,
		Attempts:       run.attempts,
		Err:            run.lastErr,
		RequestID:      run.op.RequestID,
		IdempotencyKey: run.op.IdempotencyKey,
	}
	if run.stopErr != nil {
		res.Err = run.stopErr
	}
	switch {
	case run.stopped == ReasonSucceeded, run.stopped == ReasonReconciledApplied:
		res.Outcome = classify.Succeeded
	case run.mayHaveApplied:
		res.Outcome = classify.Unknown
	default:
		res.Outcome = run.last.Outcome
	}
	return res
}
