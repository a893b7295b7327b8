package callbacks_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"
)

// TestHalfOpenWithItsProbeOutQueuesHighPriorityWork (issue 18d): one session's call is
// the half-open breaker's only probe and hangs at the dependency; another session's
// high-priority call arrives meanwhile. The breaker refuses it; admission used to
// count half-open as "available", so the call was neither queued nor told so, only
// answered "unavailable". It must be queued, and replayed once the probe succeeds.
func TestHalfOpenWithItsProbeOutQueuesHighPriorityWork(t *testing.T) {
	t.Parallel()
	srv := breakertest.NewServer(t)
	update, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "update_customer", URL: srv.URL})
	require.NoError(t, err)
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	var replays atomic.Int64
	var ctrl *admission.Controller
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{update},
		Then:  callbackstest.CallsThenText("update_customer"),
		Deps:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"update_customer"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			ctrl = admission.MustNew(admission.Config{Map: f.Deps, Journal: j, Clock: f.Clock, Sleeper: &retry.FakeSleeper{Clock: f.Clock},
				Replay: func(context.Context, journal.QueueItem) error { replays.Add(1); return nil }})
			cfg.SideEffects.Admission = ctrl
			cfg.SideEffects.QueueTools = map[string]callbacks.QueueTool{"update_customer": {MaxWait: 10 * time.Minute, Priority: admission.PriorityHigh}}
		},
	})
	b := f.Breaker(t, "crm")
	callbackstest.Trip(t, b)
	f.Clock.Advance(30 * time.Second) // the cooldown is over: the next call is the probe

	// Session A: its call becomes the probe and hangs at the dependency.
	srv.Set(breakertest.Hang())
	probeDone := make(chan *breakertest.Turn, 1)
	go func() {
		turn, _ := f.Harness.Run(context.Background(), f.Session, "update customer 41")
		probeDone <- turn
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, srv.WaitHanging(ctx, 1))
	require.Equal(t, breaker.HalfOpen, b.State())
	require.Equal(t, 1, b.Snapshot().ProbesInFlight)

	// Session B: high-priority work while the only probe is out.
	sidB, err := f.Harness.NewSession(ctx)
	require.NoError(t, err)
	turnB, err := f.Harness.Run(ctx, sidB, "update customer 42")
	require.NoError(t, err)
	frs := turnB.FunctionResponses()
	require.Len(t, frs, 1)
	require.Equal(t, callbacks.TypeQueued, frs[0].Response["response_type"], "queued, not refused and dropped")
	require.Contains(t, frs[0].Response["reason"], "crm is unavailable (being checked now)")
	items, err := j.Queued(ctx, "crm", 0)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, int64(1), srv.Requests(), "only the probe reached the dependency")
	require.Len(t, f.Events.Of(callbacks.EventQueued), 1)
	require.Empty(t, f.Events.Of(callbacks.EventShortCircuit), "nothing answered 'unavailable'")

	// The probe succeeds; the breaker closes; the queued call is replayed once.
	srv.Set(breakertest.OK("ok"))
	srv.Release()
	turnA := <-probeDone
	require.NotNil(t, turnA)
	require.Equal(t, "ok", turnA.FunctionResponses()[0].Response["status"])
	require.Equal(t, breaker.Closed, b.State())
	rep, err := ctrl.Drain(ctx, "crm")
	require.NoError(t, err)
	require.Equal(t, int64(1), replays.Load(), "the queued call ran once: %+v", rep)
	items, err = j.Queued(ctx, "crm", 0, journal.QueueWaiting)
	require.NoError(t, err)
	require.Empty(t, items)
	require.Equal(t, int64(1), srv.Requests(), "the replay is the application's; the dependency saw the probe only")
	f.RequireClean(t)
}
