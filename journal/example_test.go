package journal_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbreaker/agentbreaker/journal"
)

// A journal lives on a backend from a package of its own, so that a program links only
// the driver it uses: journal/sqlite (one process, an embedded file) or
// journal/postgres (a fleet sharing a database). Their examples show a journal at
// work; without a backend, Open refuses the Config and names the field.
func ExampleOpen() {
	_, err := journal.Open(context.Background(), journal.Config{})
	fmt.Println(err)
	var ce *journal.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Field)
	// Output:
	// journal: Backend = nil: is required: sqlite.Backend{Path: ...} or postgres.Backend{DSN: ...}
	// true Backend
}

// Reconciliation and operators work on the intents that are not settled.
func ExampleState_Settled() {
	for _, s := range []journal.State{journal.StateOpen, journal.StateUnknown, journal.StateAwaitingOperator,
		journal.StateSucceeded, journal.StateApplied, journal.StateApproved} {
		fmt.Println(s, s.Settled())
	}
	// Output:
	// open false
	// unknown false
	// awaiting_operator false
	// succeeded true
	// applied true
	// approved true
}
