package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
)

// The journal on one SQLite file: intents written before a call are still there
// after the process that wrote them is gone.
func Example() {
	dir, _ := os.MkdirTemp("", "sqlite-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "intents.db")}}

	j, err := journal.Open(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = j.Intend(ctx, journal.Dispatch{RequestID: "inv-1/call-1", IdempotencyKey: "key-1",
		Dependency: "payments", Tool: "charge_card", Attempt: 1})
	j.Close()

	j, _ = journal.Open(ctx, cfg) // the next process
	defer j.Close()
	open, _ := j.Intents(ctx, journal.Filter{})
	fmt.Println(len(open), open[0].Tool, open[0].IdempotencyKey)

	_, err = journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: "a?b"}})
	fmt.Println(err)
	// Output:
	// 1 charge_card key-1
	// journal/sqlite: Backend.Path = "a?b": must not contain '?'
}
