// Package fleetlink connects package fleet to the internals of package breaker without
// widening the breaker's public API. Package breaker fills in the functions below when
// it is initialised; package fleet calls them. Nothing here is for users.
package fleetlink

import "time"

// Report is what a breaker tells its fleet at each sync. It is read under the
// breaker's lock, so its fields agree with one another.
type Report struct {
	// LocalGen is the breaker's generation when the report was read. Apply is skipped
	// when it has changed since, so a local transition is never overwritten unseen.
	LocalGen uint64
	State    uint8 // breaker.State
	// Dirty is set when the breaker changed state by itself (a trip, a probe outcome, an
	// operator) since it last applied the fleet's state; Cause is that last change's.
	Dirty bool
	Cause uint8 // breaker.Cause
	// The rolling window's counts, stripes folded in.
	Calls, Failures, Slow int64
	// NotBefore is how long the dependency asked not to be called for (the latest
	// server-stated delay still running), 0 when none.
	NotBefore time.Duration
	// Want is set when a call asked to go after the fleet's cooldown had ended and was
	// held back because this replica does not hold the probe lease.
	Want bool
}

// Adopt is the fleet's state, applied to one breaker.
type Adopt struct {
	IfLocalGen uint64 // apply only if the breaker's generation is still this
	// NewPeriod is set when the fleet's generation moved since the breaker last
	// applied it: the breaker starts a new period (a transition) even if the state is
	// the same.
	NewPeriod    bool
	State        uint8 // breaker.State: the state this replica must be in
	Cause        uint8 // breaker.Cause of the fleet's transition, for the local event
	Reason       string
	ReopenIn     time.Duration // State open: wait before a probe may go
	FailedProbes int
	Probes       int // State half-open: how many probes this replica may let through
	// Hold is how long the fleet keeps deciding for the breaker from now on; when it
	// runs out without a renewal (Redis unreachable), the breaker decides alone.
	Hold time.Duration
	// Defer is how long a call held back for the probe lease is told to wait.
	Defer time.Duration
}

// Set by package breaker's init. b is a *breaker.Breaker.
var (
	// Attach links b to a fleet; wake is called (never blocking, maybe under the
	// breaker's lock) when the breaker wants a sync soon. It fails if b is linked.
	Attach func(b any, wake func()) error
	// Detach unlinks b: it decides alone from then on.
	Detach func(b any)
	// Read returns b's report.
	Read func(b any) Report
	// Apply applies the fleet's state to b and reports whether it did (false when b
	// changed by itself since the report, or is not linked).
	Apply func(b any, a Adopt) bool
)
