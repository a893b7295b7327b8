package callbacks_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
)

// TestAQueuedMutationIsNeverTheProbe (issue 24b): the cooldown is over and the model
// calls a mutating tool that may wait: it is queued, not sent as the probe, and the
// breaker stays open; the read-only lookup of the same dependency then probes and
// closes it.
func TestAQueuedMutationIsNeverTheProbe(t *testing.T) {
	t.Parallel()
	var updates, lookups atomic.Int64
	update := callbackstest.FnTool(t, "update_customer", func(agent.Context, map[string]any) (map[string]any, error) {
		updates.Add(1)
		return map[string]any{"status": "ok"}, nil
	})
	lookup := callbackstest.FnTool(t, "lookup_customer", func(agent.Context, map[string]any) (map[string]any, error) {
		lookups.Add(1)
		return map[string]any{"status": "ok"}, nil
	})
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{update, lookup},
		Steps: []breakertest.Step{
			breakertest.Call("update_customer", map[string]any{"id": 42}),
			breakertest.Text("queued"),
			breakertest.Call("lookup_customer", map[string]any{"id": 42}),
			breakertest.Text("done"),
		},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"update_customer", "lookup_customer"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.MutatingTools = []string{"update_customer"}
			cfg.SideEffects.Admission = admission.MustNew(admission.Config{Map: f.Deps, Journal: j, Clock: f.Clock,
				Replay: func(context.Context, journal.QueueItem) error { return nil }})
			cfg.SideEffects.QueueTools = map[string]callbacks.QueueTool{"update_customer": {MaxWait: 10 * time.Minute}}
		},
	})
	b := f.Breaker(t, "crm")
	callbackstest.Trip(t, b)
	f.Clock.Advance(30 * time.Second) // the cooldown is over

	turn := f.Run(t, "upgrade customer 42")
	require.Zero(t, updates.Load(), "the mutation was not sent as the probe")
	require.Equal(t, callbacks.TypeQueued, turn.FunctionResponses()[0].Response["response_type"])
	require.Equal(t, breaker.Open, b.State(), "the mutation did not end the open period")
	items, err := j.Queued(t.Context(), "crm", 0)
	require.NoError(t, err)
	require.Len(t, items, 1)

	f.Run(t, "look up customer 42")
	require.Equal(t, int64(1), lookups.Load(), "the read-only call probed")
	require.Equal(t, breaker.Closed, b.State())
}
