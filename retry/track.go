package retry

import "fmt"

// Track returns the logical operation that a tool call belongs to within one
// invocation, so that the model re-issuing the same call (same tool, same arguments)
// counts against the same budget instead of starting afresh: the re-issue is the
// operation's next attempt, subject to MaxAttempts, the deadline, the retry budget and
// the UNKNOWN rule, and it carries the same idempotency key.
//
// The operation is identified by op.Key, or OperationKey(op.Tool, op.Args) when that is
// empty. reissue reports that the operation already existed. An operation that
// succeeded is replaced by a fresh one: asking again after a success is new work, not a
// retry. The other fields of op are used only when the operation is created.
//
// Call Forget when the invocation ends (adk-go's AfterRun callback) to free its
// operations.
func (r *Retrier) Track(invocationID string, op Operation) (run *Run, reissue bool, err error) {
	if invocationID == "" {
		return nil, false, &ConfigError{Package: "retry", Field: "invocationID", Value: `""`, Problem: "is required"}
	}
	if op.Key == "" {
		k, err := OperationKey(op.Tool, op.Args)
		if err != nil {
			return nil, false, &ConfigError{Package: "retry", Field: "Operation.Args", Value: fmt.Sprintf("%d argument(s)", len(op.Args)), Problem: err.Error()}
		}
		op.Key = k
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	ops, ok := r.tracked[invocationID]
	if ok {
		if run := ops[op.Key]; run != nil {
			if reason, _ := run.Done(); reason != ReasonSucceeded {
				return run, true, nil
			}
		}
	} else if len(r.tracked) >= r.cfg.MaxInvocations {
		return nil, false, fmt.Errorf("%w: invocation %q would be number %d (MaxInvocations %d); is Forget called when invocations end?",
			ErrTooManyOperations, invocationID, len(r.tracked)+1, r.cfg.MaxInvocations)
	}
	if _, exists := ops[op.Key]; !exists && len(ops) >= r.cfg.MaxOperationsPerInvocation {
		return nil, false, fmt.Errorf("%w: invocation %q already tracks %d operations (MaxOperationsPerInvocation)",
			ErrTooManyOperations, invocationID, len(ops))
	}
	run, err = r.Start(op)
	if err != nil {
		return nil, false, err
	}
	if ops == nil {
		ops = map[Key]*Run{}
		r.tracked[invocationID] = ops
	}
	ops[op.Key] = run
	return run, false, nil
}

// Forget drops every operation tracked for an invocation.
func (r *Retrier) Forget(invocationID string) {
	r.trackMu.Lock()
	delete(r.tracked, invocationID)
	r.trackMu.Unlock()
}

// Tracking returns how many invocations have tracked operations; a number that only
// grows means Forget is not being called.
func (r *Retrier) Tracking() int {
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	return len(r.tracked)
}
