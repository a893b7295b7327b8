package retry

import (
	"context"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
)

// Reason says why a logical operation ended, or why an attempt was refused. Its values
// form a closed set, safe as a metric label and as a reason shown to the model.
type Reason string

// The reasons.
const (
	// ReasonSucceeded: an attempt succeeded.
	ReasonSucceeded Reason = "succeeded"
	// ReasonReconciledApplied: an attempt's outcome was UNKNOWN and reconciliation
	// proved the dependency applied it. The response itself was not received.
	ReasonReconciledApplied Reason = "reconciled_applied"
	// ReasonBreakerOpen: the dependency's breaker refused the next attempt.
	ReasonBreakerOpen Reason = "breaker_open"
	// ReasonAttemptsExhausted: Policy.MaxAttempts attempts were made.
	ReasonAttemptsExhausted Reason = "attempts_exhausted"
	// ReasonDeadlineExhausted: Policy.Deadline passed, or the next backoff (or the
	// server's stated delay) would end past it.
	ReasonDeadlineExhausted Reason = "deadline_exhausted"
	// ReasonBudgetExhausted: the dependency's retry budget had no retry left.
	ReasonBudgetExhausted Reason = "retry_budget_exhausted"
	// ReasonNotRetryable: the last failure was not one waiting could fix.
	ReasonNotRetryable Reason = "not_retryable"
	// ReasonUnknownOutcome: the last attempt's outcome was UNKNOWN and the operation
	// neither declared itself idempotent nor was proved not applied, so it must not be
	// repeated automatically.
	ReasonUnknownOutcome Reason = "unknown_outcome"
	// ReasonCanceled: the caller's context ended the operation.
	ReasonCanceled Reason = "canceled"
	// ReasonJournalError: the dispatch intent could not be made durable, so the attempt
	// was not sent.
	ReasonJournalError Reason = "journal_error"
	// ReasonInFlight: an attempt of the same operation is still running (the model
	// issued the same call twice at once). It does not end the operation.
	ReasonInFlight Reason = "in_flight"
	// ReasonInvalidOperation: the Operation was rejected by Start.
	ReasonInvalidOperation Reason = "invalid_operation"
)

// Settlement is what reconciliation learned about an attempt whose outcome was UNKNOWN.
type Settlement uint8

const (
	// Unsettled: nobody knows yet; an operator may have to decide.
	Unsettled Settlement = iota
	// Applied: the dependency applied the request.
	Applied
	// NotApplied: the dependency did not apply it, so it may be sent again.
	NotApplied
)

func (s Settlement) String() string {
	switch s {
	case Applied:
		return "applied"
	case NotApplied:
		return "not_applied"
	}
	return "unsettled"
}

// Reconciler asks whether an attempt whose outcome was UNKNOWN was applied, for example
// through a status endpoint of the dependency keyed by the idempotency key, or through
// the journal. It is called without locks held and may do I/O.
type Reconciler func(ctx context.Context, a Info) (Settlement, error)

// Journal makes dispatch intents durable around attempts. Intend runs after the breaker
// admitted the attempt and before it is sent; when it fails the attempt is not sent.
// Record runs after the attempt with its classification. The journal package provides
// one (journal.Journal.ForRetry).
type Journal interface {
	Intend(ctx context.Context, a Info) (intentID string, err error)
	Record(ctx context.Context, a Info, c classify.Classification) error
}

// Info describes one attempt of a logical operation. It is a plain value.
type Info struct {
	Dependency     string
	Tool           string
	RequestID      string
	IdempotencyKey string
	// Key identifies the logical operation (see OperationKey).
	Key Key
	// ArgsHash is the hex SHA-256 of the canonical arguments (see ArgsHash).
	ArgsHash string
	// Args are the operation's arguments, as given in Operation.Args.
	Args map[string]any
	// Number counts attempts from 1.
	Number int
	// PolicyVersion is the version of the policy in force.
	PolicyVersion string
	// IntentID is the journal's id for this attempt's intent; "" without a journal.
	IntentID string
	// Started is when the attempt was admitted.
	Started time.Time
	// Deadline is when the operation's deadline ends.
	Deadline time.Time
}

// Func makes one attempt and says what happened. The context carries the operation's
// idempotency key (see IdempotencyKeyFrom) and ends at the operation's deadline. A zero
// Classification is filled in from err by classify.Error.
type Func func(ctx context.Context, a Info) (classify.Classification, error)

// Decision is what happens after an attempt.
type Decision struct {
	// Retry reports that another attempt is allowed after Delay; the retry has been
	// charged to the dependency's budget.
	Retry bool
	// Delay is the backoff before the next attempt: full jitter, raised to the delay the
	// dependency asked for, never past the deadline.
	Delay time.Duration
	// Reason is why the operation ended, when Retry is false.
	Reason Reason
}

// Result is the end of a logical operation.
type Result struct {
	// Outcome is the operation's outcome: SUCCEEDED when an attempt succeeded (or
	// reconciliation proved one applied); UNKNOWN when any attempt's outcome was UNKNOWN
	// and not proved unapplied, since that attempt may have taken effect;
	// FAILED_BEFORE_SEND when the last step was refused before sending (open breaker,
	// journal failure); otherwise the last attempt's outcome.
	Outcome classify.Outcome
	// Reason is why the operation ended.
	Reason Reason
	// Last is the classification of the last step: the last attempt, or the refusal
	// that ended the operation.
	Last classify.Classification
	// Attempts counts the attempts that were sent (the Func ran).
	Attempts int
	// Err is the last attempt's error, or the error that stopped the operation.
	Err error
	// RequestID and IdempotencyKey identify the operation.
	RequestID      string
	IdempotencyKey string
}
