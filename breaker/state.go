package breaker

// State is where a breaker stands. Its String form is the value used in metric labels,
// logs and the payloads the model reads.
type State uint8

const (
	// Closed lets calls through and measures them.
	Closed State = iota
	// ForcedClosed lets every call through and keeps measuring, but never trips:
	// the breaker is switched off by an operator without losing its numbers.
	ForcedClosed
	// Open rejects calls until the cooldown ends.
	Open
	// HalfOpen lets a bounded number of probe calls through; their outcome decides.
	HalfOpen
	// ForcedOpen rejects every call until an operator releases the breaker.
	ForcedOpen
)

// The breaker packs its state, a "calls are timed" flag and its generation into one
// atomic word, so the hot path decides with a single load: the two states that admit
// calls are 0 and 1, and a word whose low bits are at most 1 admits untimed calls.
const (
	stateMask = 7
	timedBit  = 8
	genShift  = 4

	// slowPathBits are set in the word exactly when Allow cannot admit without more
	// work: the state is neither Closed (0) nor ForcedClosed (1), or calls are timed.
	slowPathBits = stateMask&^1 | timedBit
)

var stateNames = [...]string{
	Closed:       "closed",
	Open:         "open",
	HalfOpen:     "half_open",
	ForcedOpen:   "forced_open",
	ForcedClosed: "forced_closed",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// Admits reports whether the state lets ordinary (non-probe) calls through.
func (s State) Admits() bool { return s <= ForcedClosed }

// Cause says why a breaker changed state. Its String form is a bounded metric label;
// the human sentence is in Event.Reason.
type Cause uint8

const (
	// CauseFailureRate: the failure rate crossed its threshold with enough calls.
	CauseFailureRate Cause = iota + 1
	// CauseSlowCallRate: the share of slow calls crossed its threshold with enough calls.
	CauseSlowCallRate
	// CauseCooldownElapsed: the open period ended and a probe was let through.
	CauseCooldownElapsed
	// CauseProbeSucceeded: the half-open probes succeeded and the breaker closed.
	CauseProbeSucceeded
	// CauseProbeFailed: a half-open probe failed (or was too slow) and the breaker reopened.
	CauseProbeFailed
	// CauseRetryAfter: the dependency asked for a longer pause; the reopen time moved later.
	CauseRetryAfter
	// CauseOperator: an operator forced, released or reset the breaker.
	CauseOperator
)

var causeNames = [...]string{
	CauseFailureRate:     "failure_rate",
	CauseSlowCallRate:    "slow_call_rate",
	CauseCooldownElapsed: "cooldown_elapsed",
	CauseProbeSucceeded:  "probe_succeeded",
	CauseProbeFailed:     "probe_failed",
	CauseRetryAfter:      "retry_after",
	CauseOperator:        "operator",
}

func (c Cause) String() string {
	if int(c) < len(causeNames) && causeNames[c] != "" {
		return causeNames[c]
	}
	return "unknown"
}
