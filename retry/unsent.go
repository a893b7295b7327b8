package retry

import (
	"context"

	"github.com/agentbreaker/agentbreaker/classify"
)

// Unsent reports that an admitted attempt was never sent: something between Admit and
// the send refused it (in adk-go, a later callback such as a tool-confirmation request
// stopped the call). The attempt is not counted and no retry is charged, so the
// caller's next Admit is the same attempt again; its journal intent, if any, is
// recorded as FAILED_BEFORE_SEND. It is a no-op after Finish or another Unsent, and
// Finish after Unsent is a no-op.
func (a *Attempt) Unsent(ctx context.Context) {
	if !a.finished.CompareAndSwap(false, true) {
		return
	}
	a.cancel()
	run := a.run
	r := run.r
	r.path.Release(&a.call)
	c := classify.Classification{Outcome: classify.FailedBeforeSend, Class: classify.ClassCanceled, Verdict: classify.Neutral}
	var jerr error
	if a.info.IntentID != "" {
		jerr = r.cfg.Journal.Record(context.WithoutCancel(ctx), a.info, c)
	}
	run.mu.Lock()
	run.inFlight = false
	run.attempts = a.info.Number - 1
	run.retryGranted = run.attempts > 0
	run.mu.Unlock()
	run.emit(ctx, Event{Attempt: a.info.Number, Outcome: c.Outcome, ErrorClass: c.Class, BreakerState: a.admitState,
		Retry: true, At: r.clk.Now(), JournalErr: jerr, IntentID: a.info.IntentID})
}
