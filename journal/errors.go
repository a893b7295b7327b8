package journal

import (
	"errors"
	"fmt"

	"github.com/agentbreaker/agentbreaker"
)

var (
	// ErrClosed is returned by every method of a closed Journal.
	ErrClosed = errors.New("journal: closed")
	// ErrNotFound is returned when no intent or queue item has the id.
	ErrNotFound = errors.New("journal: not found")
	// ErrCorrupt is returned when a stored intent no longer matches its checksum.
	ErrCorrupt = errors.New("journal: record does not match its checksum")
	// ErrSchemaTooNew is returned by Open when the tables were migrated by a newer build.
	ErrSchemaTooNew = errors.New("journal: schema is newer than this build")
	// ErrQueueFull is returned by Enqueue when the dependency's queue is at its limit.
	ErrQueueFull = errors.New("journal: queue full")
	// ErrState is the sentinel of every *StateError.
	ErrState = errors.New("journal: wrong state")
)

// StateError says an intent or queue item was not in a state the operation needs,
// for example Approve on an intent that already succeeded.
type StateError struct {
	ID    string
	State string   // the state it is in
	Want  []string // the states the operation accepts
	Op    string   // the operation, for example "approve"
}

func (e *StateError) Error() string {
	return fmt.Sprintf("journal: %s %s: it is %s, not one of %v", e.Op, e.ID, e.State, e.Want)
}

// Unwrap returns ErrState.
func (e *StateError) Unwrap() error { return ErrState }

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError
