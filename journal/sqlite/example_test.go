package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"
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
	// journal/sqlite: Backend.Path = a?b: must not contain '?'
}

// The journal's story on SQLite: a process records its intent and dies before the
// answer; the next one asks the dependency what became of the call.
func Example_reconcile() {
	dir, _ := os.MkdirTemp("", "journal-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "agent.db")}}

	// A process records its intent, sends the call, and dies before the answer.
	j, err := journal.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	in, _ := j.Intend(ctx, journal.Dispatch{
		RequestID: "inv-1/call-7", IdempotencyKey: retry.NewIdempotencyKey(),
		Dependency: "payments", Tool: "charge_card", Args: map[string]any{"amount": 42}, Attempt: 1,
	})
	j.Close()

	// The next process asks the payment service what became of it.
	cfg.Lookups = map[string]journal.StatusLookup{
		"payments": func(ctx context.Context, in journal.Intent) (journal.Status, error) {
			return journal.StatusApplied, nil // e.g. GET /charges?idempotency_key=...
		},
	}
	j, _ = journal.Open(ctx, cfg)
	defer j.Close()
	rep, _ := j.Reconcile(ctx)
	fmt.Println("applied:", len(rep.Applied), "awaiting an operator:", len(rep.Awaiting))
	got, _ := j.Get(ctx, in.ID)
	fmt.Println(got.Tool, got.State, "-", got.Note)
	fmt.Println("arguments kept:", got.Args != nil)
	// Output:
	// applied: 1 awaiting an operator: 0
	// charge_card applied - status lookup: applied
	// arguments kept: false
}

// An intent no lookup can settle waits for an operator, who allows the replay.
func Example_approve() {
	dir, _ := os.MkdirTemp("", "journal-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	j, _ := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "agent.db")}})
	defer j.Close()

	in, _ := j.Intend(ctx, journal.Dispatch{RequestID: "r", IdempotencyKey: "k", Dependency: "mail", Tool: "send_email", Attempt: 1})
	_ = j.Finish(ctx, in.ID, classify.ForClass(classify.ClassTimeout)) // UNKNOWN: was it sent?
	_, _ = j.Reconcile(ctx)                                            // no lookup for "mail"

	pending, _ := j.Pending(ctx) // what an admin endpoint shows
	fmt.Println(len(pending), pending[0].Tool, pending[0].State)
	_ = j.Approve(ctx, pending[0].ID) // the operator checked: not sent; replay allowed
	after, _ := j.Get(ctx, in.ID)
	fmt.Println(after.State)
	// Output:
	// 1 send_email awaiting_operator
	// approved
}
