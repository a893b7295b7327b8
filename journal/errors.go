package journal

import (
	"errors"
	"fmt"
	"strings"

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

// BadRecord names one stored row that failed its checks, and the problem.
type BadRecord struct {
	// ID is the row's id ("" when even that could not be read).
	ID string
	// Problem says what is wrong, for example that it does not match its checksum.
	Problem string
}

// CorruptError lists stored rows that failed their checks. The methods that return
// it also return every healthy row: one bad row does not hide the rest. It unwraps to
// ErrCorrupt.
type CorruptError struct {
	Table   string // "intents" or "queue"
	Records []BadRecord
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "journal: %d %s row(s) failed their checks:", len(e.Records), e.Table)
	for i, r := range e.Records {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(e.Records)-5)
			break
		}
		fmt.Fprintf(&b, " %s (%s);", r.ID, r.Problem)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

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
