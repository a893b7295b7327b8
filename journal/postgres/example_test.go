package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
)

// A fleet shares one journal in PostgreSQL. Bad settings are refused before any
// connection is made, and the DSN (which may hold a password) is never echoed.
func Example() {
	_, err := journal.Open(context.Background(), journal.Config{Backend: postgres.Backend{DSN: "postgres://u:secret@host:notaport/db"}})
	fmt.Println(err)
	// Output:
	// journal/postgres: Backend.DSN = (not shown: it may hold a password): is not a valid pgx connection string
}

// Opening a journal a fleet shares, as a program does at start-up.
func Example_open() {
	ctx := context.Background()
	j, err := journal.Open(ctx, journal.Config{
		Backend: postgres.Backend{DSN: os.Getenv("JOURNAL_DSN")},
		Prefix:  "support_agent_",
		// Every replica shares the secret; it is kept out of the database.
		KeyFile: "/etc/support-agent/journal.key",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	report, _ := j.Reconcile(ctx) // settle what a crashed replica left open
	fmt.Println(len(report.Applied))
}
