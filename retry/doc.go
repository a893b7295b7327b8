// Package retry runs a logical operation (one tool call, one model request) under a
// single budget, so that retries cannot multiply load on a dependency that is failing.
//
// An agent stacks retries: the tool's client retries, sub-agents call the same tool,
// and the model itself calls a failed tool again. Each layer's limit looks reasonable
// alone; together they send a dying service many times its normal load. This package
// puts the budget in one place.
//
// # One operation, one budget
//
// A [Retrier] owns each operation's budget: at most Policy.MaxAttempts attempts and
// Policy.Deadline of time, whichever runs out first. Before every attempt it asks the
// dependency's breaker (Operation.Breaker); an open breaker ends the operation as
// FAILED_BEFORE_SEND with reason breaker_open. Between attempts it waits a full-jitter
// backoff, uniform in [0, min(MaxDelay, BaseDelay·2^n)) after attempt n (from 0),
// raised to any delay the dependency stated (Retry-After, RetryInfo) and never ending
// past the deadline: a wait that would is not slept at all.
//
// # A retry budget per dependency
//
// Retries of every operation against a dependency draw on one [Budget] (shared through
// [Budgets]): at most Ratio (10%) of the operations started in the last Window (10s),
// plus a small floor (one per window) so that a quiet dependency can still retry. When
// failures rise, retries fall. A retry is charged when it is granted, so retries
// waiting out their backoff count too. A retry that another limit already bounds is
// admitted with [Run.AdmitOutsideBudget], which the budget neither refuses nor counts.
//
// # When a retry is safe
//
// Outcomes come from the classify package. SUCCEEDED ends the operation, and so does a
// failure that is not retryable. An UNKNOWN outcome (the request may have been applied)
// is retried only when the operation declares itself idempotent, or when its
// [Reconciler] proves the attempt was not applied; otherwise the operation ends with
// reason unknown_outcome. Every attempt carries the operation's idempotency key in its
// context ([IdempotencyKeyFrom]); the httptransport package sends it as a header.
//
// # The model's own re-issues
//
// [Retrier.Track] maps a tool call to its logical operation within an invocation by
// [OperationKey] (tool name and a hash of canonical arguments). A tool callback calls
// Track, then [Run.Admit] before the tool runs and [Attempt.Finish] after it: the
// model calling the same tool with the same arguments again is the operation's next
// attempt, refused once the operation's attempts, deadline or budget are spent, or
// while its UNKNOWN outcome is unsettled. [Retrier.Forget] frees an invocation.
//
// # Records
//
// Every attempt, and every attempt refused before it was sent, produces an [Event]
// (dependency, request_id, attempt, outcome, error_class, elapsed_ms, breaker_state,
// policy_version) for the Config.OnAttempt hooks and the Config.Logger. An operation
// asked again after it ended (the model re-issuing a call the attempt cap refused)
// records the refused attempt once, however often it is asked. A caller that holds
// the breaker itself passes its state with WithAdmittingState.
//
// # Time
//
// Deadlines and budgets read Config.Clock and waits go through Config.Sleeper, so tests
// drive time with clock.Fake and [FakeSleeper] and never sleep.
package retry
