package admission_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"
)

func Example() {
	ctx := context.Background()
	fc := clock.NewFake(time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC))
	dir, _ := os.MkdirTemp("", "admission-example")
	defer os.RemoveAll(dir)
	j, _ := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "agent.db")}, Clock: fc})
	defer j.Close()

	// The map is built first; its listener reaches the controller built after it.
	var ctrl *admission.Controller
	m := dependencymap.MustNew(dependencymap.Config{
		Clock:         fc,
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}}},
		OnStateChange: []func(breaker.Event){func(e breaker.Event) { ctrl.OnStateChange(e) }},
	})
	ctrl = admission.MustNew(admission.Config{
		Map: m, Journal: j, Clock: fc, Sleeper: &retry.FakeSleeper{Clock: fc},
		Replay: func(ctx context.Context, it journal.QueueItem) error {
			fmt.Println("replaying", it.Tool, string(it.Payload))
			return nil
		},
	})

	crm, _ := m.Get("crm")
	crm.ForceOpen("CRM maintenance window")

	low, _ := ctrl.Admit(ctx, admission.Work{Dependency: "crm", Tool: "tag_contact", Priority: admission.PriorityLow})
	fmt.Println(low.Verdict, "-", low.Message(nil))
	q, _ := ctrl.Admit(ctx, admission.Work{Dependency: "crm", Tool: "update_customer", Priority: admission.PriorityNormal,
		MaxWait: 90 * time.Minute, Payload: []byte(`{"id":7,"email":"new@example.com"}`)})
	fmt.Println(q.Verdict, "-", q.Message(nil))

	crm.Reset("maintenance over")
	rep, _ := ctrl.Drain(ctx, "crm") // Run does this when the breaker closes
	fmt.Println("replayed:", rep.Replayed)
	// Output:
	// reject - Not done: crm is unavailable (taken offline by an operator) and low-priority work is not queued. Continue without it.
	// queue - Queued until 15:30 UTC, will run when crm recovers; crm is unavailable (taken offline by an operator). Do not call update_customer again for this request.
	// replaying update_customer {"id":7,"email":"new@example.com"}
	// replayed: 1
}
