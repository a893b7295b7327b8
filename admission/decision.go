package admission

import (
	"fmt"
	"strconv"
	"time"
)

// Priority orders work: low-priority work is rejected while its dependency is open,
// and queued work is replayed highest first. Any int is a priority; the constants are
// the usual points.
type Priority int

// Usual priorities.
const (
	PriorityLow    Priority = 10
	PriorityNormal Priority = 20
	PriorityHigh   Priority = 30
)

func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// ReplayPolicy says what happens to a queued item when its dependency recovers.
type ReplayPolicy string

const (
	// ReplayAuto: Config.Replay runs it again (with its idempotency key).
	ReplayAuto ReplayPolicy = "auto"
	// ReplayHandOver: Config.OnHandOver receives it, and the application decides (for
	// work a person should confirm again).
	ReplayHandOver ReplayPolicy = "hand_over"
)

// Verdict is what happens to new work.
type Verdict uint8

const (
	// Admit: go ahead.
	Admit Verdict = iota + 1
	// Reject: do not do it; tell the caller Decision.Message.
	Reject
	// Queue: it was stored durably and will run when the dependency recovers, unless it
	// expires first.
	Queue
)

func (v Verdict) String() string {
	switch v {
	case Admit:
		return "admit"
	case Reject:
		return "reject"
	case Queue:
		return "queue"
	}
	return "unset"
}

// Reason says why, from a closed set safe for metric labels and payloads.
type Reason string

// The reasons.
const (
	ReasonAvailable    Reason = "dependency_available" // Admit: closed, or about to probe
	ReasonNoDependency Reason = "no_dependency"        // Admit: the step needs no dependency
	ReasonUnguarded    Reason = "unguarded"            // Admit: no breaker guards the dependency
	ReasonLowPriority  Reason = "low_priority"         // Reject: below Config.MinQueuePriority
	ReasonCannotWait   Reason = "cannot_wait"          // Reject: Work.MaxWait is zero
	ReasonReadOnly     Reason = "read_only"            // Reject: reads are not queued; their answer would be stale
	ReasonExpiresFirst Reason = "expires_before_recovery"
	ReasonQueueFull    Reason = "queue_full" // Reject: Config.MaxQueued items already wait
	// ReasonUnresolved: Reject: an earlier attempt under the same idempotency key has
	// an unknown outcome; queueing it could apply it twice.
	ReasonUnresolved Reason = "unresolved_earlier_attempt"
	ReasonQueued     Reason = "queued" // Queue
)

// Decision is the answer for one piece of work.
type Decision struct {
	Verdict Verdict
	Reason  Reason
	// Dependency and Tool repeat the work's.
	Dependency string
	Tool       string
	// BreakerState is the state that decided; "" when no breaker was consulted.
	BreakerState string
	// RecoverAt is the earliest time the dependency may be tried again; zero when
	// nobody knows: an operator forced the breaker open, or it is half-open with its
	// probes out and may recover any moment.
	RecoverAt time.Time
	// QueuedUntil is when a queued item expires if it has not run.
	QueuedUntil time.Time
	// ItemID identifies the queued item in the journal.
	ItemID string
	// MaxQueued is the limit that was hit, for ReasonQueueFull.
	MaxQueued int
}

// Message is the decision in words for the model (or a person), with times as HH:MM
// in loc (UTC when nil). It is empty for work that was admitted.
func (d Decision) Message(loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	hm := func(t time.Time) string { return t.In(loc).Format("15:04 MST") }
	down := d.Dependency + " is unavailable"
	switch {
	case !d.RecoverAt.IsZero():
		down += " (next check " + hm(d.RecoverAt) + ")"
	case d.BreakerState == "forced_open":
		down += " (taken offline by an operator)"
	case d.BreakerState == "half_open":
		down += " (being checked now)"
	}
	switch d.Reason {
	case ReasonQueued:
		return fmt.Sprintf("Queued until %s, will run when %s recovers; %s. Do not call %s again for this request.",
			hm(d.QueuedUntil), d.Dependency, down, d.Tool)
	case ReasonLowPriority:
		return "Not done: " + down + " and low-priority work is not queued. Continue without it."
	case ReasonCannotWait:
		return "Not done: " + down + " and this work cannot wait. Continue without it."
	case ReasonReadOnly:
		return "Not done: " + down + " and reads are not queued. Continue without this data."
	case ReasonExpiresFirst:
		return fmt.Sprintf("Not queued: %s, later than this work may wait (until %s). Continue without it.", down, hm(d.QueuedUntil))
	case ReasonUnresolved:
		return "Not queued: an earlier attempt of this request may already have been carried out, and its outcome is unknown. Do not repeat it; an operator must check it first."
	case ReasonQueueFull:
		return fmt.Sprintf("Not queued: %s and %d requests already wait for it. Continue without it.", down, d.MaxQueued)
	}
	return ""
}
