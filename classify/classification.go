package classify

import "time"

// Classification is the verdict on one finished call. It is a plain value,
// safe to copy and to share between goroutines.
type Classification struct {
	// Outcome says whether the call reached the dependency and whether it
	// may have been applied.
	Outcome Outcome
	// Class is the kind of failure, one of the Class constants; ClassNone
	// for a success.
	Class Class
	// Verdict is what the circuit breaker should record.
	Verdict Verdict
	// Retryable reports that the failure looks transient, so a later
	// attempt could succeed. It does not say that a retry is safe: check
	// Outcome before replaying anything with side effects.
	Retryable bool
	// ConfigFault marks failures caused by our own setup (bad credentials,
	// an untrusted certificate). They should be surfaced loudly and never
	// trip a breaker, because waiting does not fix them.
	ConfigFault bool
	// RetryAfter is the delay the server asked for, from a Retry-After
	// header, a RetryInfo detail or an in-band retry_after field; 0 when
	// none was given. It is never negative.
	RetryAfter time.Duration
	// StatusCode is the HTTP or API status code when one is known, else 0.
	StatusCode int
}

// CountsAsFailure reports whether the breaker should record the call as a
// failure toward tripping.
func (c Classification) CountsAsFailure() bool { return c.Verdict == Counts }

// of returns the default classification of class with outcome replaced; it
// keeps the classifiers short where only the outcome differs from the
// class's default.
func of(class Class, outcome Outcome) Classification {
	c := ForClass(class)
	c.Outcome = outcome
	return c
}
