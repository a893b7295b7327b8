package callbacks_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
)

// TestQueuedUntilAnswerThroughTheRunner: with the CRM's breaker open, a call of a tool
// configured to queue is stored in the journal's queue and the model is told when it
// expires ("queued until HH:MM"); a tool not configured to queue still gets the
// unavailable payload. Neither tool runs.
func TestQueuedUntilAnswerThroughTheRunner(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	handler := func(agent.Context, map[string]any) (map[string]any, error) {
		runs.Add(1)
		return map[string]any{"status": "ok"}, nil
	}
	update := fnTool(t, "update_customer", handler)
	lookup := fnTool(t, "lookup_customer", handler)
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	args := map[string]any{"id": 42, "tier": "gold"}
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{update, lookup},
		steps: []breakertest.Step{
			breakertest.Call("update_customer", args),
			breakertest.Call("lookup_customer", map[string]any{"id": 42}),
			breakertest.Text("done"),
		},
		deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"update_customer", "lookup_customer"}}},
		prepare: func(f *fixture, cfg *callbacks.Config) {
			cfg.Admission = admission.MustNew(admission.Config{Map: f.deps, Journal: j, Clock: f.clk,
				Replay: func(context.Context, journal.QueueItem) error { return nil }})
			cfg.QueueTools = map[string]callbacks.QueueTool{"update_customer": {MaxWait: 10 * time.Minute}}
		},
	})
	f.clk.Set(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))
	b := f.breaker(t, "crm")
	for range 4 { // trip it: 4 failures of 4 calls
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Open, b.State())

	turn := f.run(t, "upgrade customer 42")
	require.Zero(t, runs.Load(), "neither tool ran")
	frs := turn.FunctionResponses()
	require.Len(t, frs, 2)
	q := frs[0].Response
	require.Equal(t, callbacks.TypeQueued, q["response_type"])
	require.Equal(t, callbacks.StatusQueued, q["status"])
	require.Equal(t, "2026-11-29T14:10:00Z", q[callbacks.KeyQueuedUntil])
	require.Contains(t, q["reason"], "Queued until 14:10 UTC, will run when crm recovers")
	require.Contains(t, q["instruction"], "Do not call this tool again")
	require.Equal(t, payloads.TypeUnavailable, frs[1].Response["response_type"], "a tool not configured to queue")

	items, err := j.Queued(t.Context(), "crm", 0)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, q[callbacks.KeyQueueItemID], items[0].ID)
	require.Equal(t, "update_customer", items[0].Tool)
	require.JSONEq(t, `{"id":42,"tier":"gold"}`, string(items[0].Payload), "the arguments travel with the item for its replay")
	require.Len(t, f.ev.of(callbacks.EventQueued), 1)
	require.Len(t, f.ev.of(callbacks.EventShortCircuit), 1)
	f.requireClean(t)
}

func TestQueueConfigErrors(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		cfg     callbacks.Config
		wantErr string
	}{
		{name: "no admission", cfg: callbacks.Config{QueueTools: map[string]callbacks.QueueTool{"t": {MaxWait: time.Minute}}},
			wantErr: "Config.Admission is nil"},
		{name: "no wait", cfg: callbacks.Config{QueueTools: map[string]callbacks.QueueTool{"t": {}}},
			wantErr: `Config.QueueTools["t"].MaxWait = 0s`},
		{name: "empty name", cfg: callbacks.Config{QueueTools: map[string]callbacks.QueueTool{"": {MaxWait: time.Minute}}},
			wantErr: `Config.QueueTools[""]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dependencies = deps
			_, err := callbacks.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
