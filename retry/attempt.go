package retry

import (
	"context"
	"sync/atomic"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// Attempt is one admitted attempt. Send it with Context and report it once with Finish.
// It is safe for concurrent use; Finish after the first is a no-op.
type Attempt struct {
	run        *Run
	info       Info
	ctx        context.Context
	cancel     context.CancelFunc
	call       callpath.Call // the operation's breaker on the call path, when it has one
	admitState string
	lowerState atomic.Int32 // breaker state reported by a lower layer, plus one
	finished   atomic.Bool
}

type attemptKey struct{}

// Context returns the context to send the attempt with: it carries the idempotency key
// and ends at the operation's deadline.
func (a *Attempt) Context() context.Context { return a.ctx }

// Info describes the attempt.
func (a *Attempt) Info() Info { return a.info }

// ReportBreakerState lets a lower layer that holds the dependency's breaker (the
// httptransport package) say which state it found, for the attempt's record. It does
// nothing when ctx is not an attempt's context.
func ReportBreakerState(ctx context.Context, s breaker.State) {
	if a, ok := ctx.Value(attemptKey{}).(*Attempt); ok {
		a.lowerState.Store(int32(s) + 1)
	}
}

// WithAdmittingState returns ctx carrying the state of the breaker that admitted the
// call, for a caller that holds the dependency's breaker itself rather than giving it
// to the Operation (the callbacks plugin): Run.Admit writes it into the records of
// attempts it refuses before they are sent, as it does for an Operation's own breaker.
// The hooks then receive the wrapped context, which hides the methods of the caller's
// own (an adk-go tool context's InvocationID): prefer Run.AdmitWithState.
func WithAdmittingState(ctx context.Context, s breaker.State) context.Context {
	return context.WithValue(ctx, admittingKey{}, s)
}

type admittingKey struct{}

// admittingState is the state given to WithAdmittingState, or "" when none was.
func admittingState(ctx context.Context) string {
	if s, ok := ctx.Value(admittingKey{}).(breaker.State); ok {
		return s.String()
	}
	return ""
}

// Finish reports the attempt's outcome and returns what comes next. A zero
// Classification is filled in from err (classify.Error with the attempt's context). ctx
// is the caller's context, used to reconcile an UNKNOWN outcome; the journal records
// the outcome even when ctx has ended.
func (a *Attempt) Finish(ctx context.Context, c classify.Classification, err error) Decision {
	run := a.run
	if !a.finished.CompareAndSwap(false, true) {
		reason, _ := run.Done()
		return Decision{Reason: reason}
	}
	if c.Outcome == 0 {
		c = classify.Error(a.ctx, err)
	}
	a.cancel()
	r := run.r
	now := r.clk.Now()
	if a.call.Breaker != nil {
		r.path.Settle(ctx, &a.call, c, "")
	}
	var jerr error
	if a.info.IntentID != "" {
		jerr = r.cfg.Journal.Record(context.WithoutCancel(ctx), a.info, c)
	}
	d := run.decide(ctx, a.info, c, err, now)
	state := a.admitState
	if s := a.lowerState.Load(); s > 0 {
		state = breaker.State(s - 1).String()
	}
	run.emit(ctx, Event{Attempt: a.info.Number, Outcome: c.Outcome, ErrorClass: c.Class, Elapsed: now.Sub(a.info.Started),
		BreakerState: state, Dispatched: true, Retry: d.Retry, Delay: d.Delay, Stop: d.Reason, At: now, reissue: run.chargeOnAdmit,
		Err: err, JournalErr: jerr, IntentID: a.info.IntentID})
	return d
}
