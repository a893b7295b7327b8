package classify

import "strconv"

// Outcome records what is known about whether a call reached its dependency
// and whether the dependency may have acted on it. It matters most for
// retries: a call that provably never left the process can be repeated
// safely, while a call with an [Unknown] outcome may already have had its
// side effect.
//
// The zero value means "not classified" and prints as "UNSET".
type Outcome uint8

const (
	// Succeeded means a valid response arrived.
	Succeeded Outcome = iota + 1
	// FailedBeforeSend means the request never left the process or never
	// reached the remote end (local rejection, refused connection, failed
	// DNS lookup, failed TLS handshake). Nothing can have been applied.
	FailedBeforeSend
	// Failed means the dependency answered with a definitive error, so it
	// did not apply the request (for example 404, 400, 429, 503).
	Failed
	// Unknown means the request may have been received and applied, but
	// no trustworthy answer came back (timeouts after sending, resets,
	// most 5xx responses, unrecognised errors). Replaying a mutation after
	// this outcome needs an idempotency key or reconciliation.
	Unknown
)

// String returns the upper-case name used in logs, metric labels and
// payloads, for example "FAILED_BEFORE_SEND".
func (o Outcome) String() string {
	switch o {
	case 0:
		return "UNSET"
	case Succeeded:
		return "SUCCEEDED"
	case FailedBeforeSend:
		return "FAILED_BEFORE_SEND"
	case Failed:
		return "FAILED"
	case Unknown:
		return "UNKNOWN"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Verdict is what a circuit breaker should do with one finished call. It is
// kept apart from [Outcome] because the two answer different questions: a
// 404 is a Failed call, yet it proves the dependency is up, so the breaker
// must see it as healthy.
//
// The zero value means "not classified" and prints as "unset".
type Verdict uint8

const (
	// Healthy means the dependency behaved correctly, even if the caller
	// did not get what it wanted: successes, 404s, validation errors on
	// arguments the model invented, empty results, 401/403, and business
	// refusals ([ClassRefused]: a declined card, "no such customer"). The
	// breaker records a success: the call is in its window, as the dependency
	// working, on every hop (tools, MCP tools, remote agents, workflow nodes).
	Healthy Verdict = iota + 1
	// Counts means the call is evidence that the dependency is failing
	// (connection errors, timeouts, 5xx, 429) and is recorded as a
	// failure toward tripping the breaker.
	Counts
	// Neutral means the call says nothing about the dependency: the caller
	// cancelled or ran out of its own time, the call was rejected locally,
	// or a local TLS configuration problem stopped it. The breaker should
	// release the permit without touching its window. A refusal in the
	// dependency's own words is not neutral: the dependency answered (Healthy).
	Neutral
)

// String returns the lower-case name used in logs and metric labels.
func (v Verdict) String() string {
	switch v {
	case 0:
		return "unset"
	case Healthy:
		return "healthy"
	case Counts:
		return "counts"
	case Neutral:
		return "neutral"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}
