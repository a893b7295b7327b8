package callbacks_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"

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
	update := callbackstest.FnTool(t, "update_customer", handler)
	lookup := callbackstest.FnTool(t, "lookup_customer", handler)
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	args := map[string]any{"id": 42, "tier": "gold"}
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{update, lookup},
		Steps: []breakertest.Step{
			breakertest.Call("update_customer", args),
			breakertest.Call("lookup_customer", map[string]any{"id": 42}),
			breakertest.Text("done"),
		},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"update_customer", "lookup_customer"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.Admission = admission.MustNew(admission.Config{Map: f.Deps, Journal: j, Clock: f.Clock,
				Replay: func(context.Context, journal.QueueItem) error { return nil }})
			cfg.SideEffects.QueueTools = map[string]callbacks.QueueTool{"update_customer": {MaxWait: 10 * time.Minute}}
		},
	})
	f.Clock.Set(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))
	b := f.Breaker(t, "crm")
	for range 4 { // trip it: 4 failures of 4 calls
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Open, b.State())

	turn := f.Run(t, "upgrade customer 42")
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
	require.Len(t, f.Events.Of(callbacks.EventQueued), 1)
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 1)
	f.RequireClean(t)
}

func TestQueueConfigErrors(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		cfg     callbacks.Config
		wantErr string
	}{
		{name: "no admission", cfg: callbacks.Config{SideEffects: callbacks.SideEffects{QueueTools: map[string]callbacks.QueueTool{"t": {MaxWait: time.Minute}}}},
			wantErr: "Config.SideEffects.Admission = nil: is required with Config.SideEffects.QueueTools"},
		{name: "no wait", cfg: callbacks.Config{SideEffects: callbacks.SideEffects{QueueTools: map[string]callbacks.QueueTool{"t": {}}}},
			wantErr: `Config.SideEffects.QueueTools["t"].MaxWait = 0s`},
		{name: "empty name", cfg: callbacks.Config{SideEffects: callbacks.SideEffects{QueueTools: map[string]callbacks.QueueTool{"": {MaxWait: time.Minute}}}},
			wantErr: `Config.SideEffects.QueueTools key = "": tool name is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dependencies = deps
			_, err := callbacks.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// paymentsServer is a local payments service that records every request's
// idempotency key and applies each key once. With dropFirst, the first request of a
// key is applied and its connection dropped before any answer (an UNKNOWN outcome);
// otherwise it is answered 200.
type paymentsServer struct {
	*httptest.Server
	dropFirst bool
	mu        sync.Mutex
	keys      []string
	applied   map[string]bool
}

func newPaymentsServer(t *testing.T, dropFirst bool) *paymentsServer {
	t.Helper()
	s := &paymentsServer{dropFirst: dropFirst, applied: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get(httptransport.DefaultIdempotencyHeader)
		s.mu.Lock()
		s.keys = append(s.keys, key)
		seen := s.applied[key]
		s.applied[key] = true
		s.mu.Unlock()
		if !seen && s.dropFirst {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		}
		_, _ = w.Write([]byte(`{"charged": true}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns every key received, in order, and how many charges were applied.
func (s *paymentsServer) requests() (keys []string, charges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...), len(s.applied)
}

// replayTo is an admission Replay that sends a queued charge to the server with the
// item's idempotency key, as an application's replay would.
func replayTo(u string) func(ctx context.Context, it journal.QueueItem) error {
	return func(ctx context.Context, it journal.QueueItem) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(it.Payload))
		if err != nil {
			return err
		}
		req.Header.Set(httptransport.DefaultIdempotencyHeader, it.IdempotencyKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

// queueFixture is an agent whose charge tool is mutating and queued while payments'
// breaker (which trips on one failure) is open, with a retry orchestrator, a journal
// and an admission controller replaying to srv.
func queueFixture(t *testing.T, srv *paymentsServer, fc callbackstest.Config) (*callbackstest.Fixture, *journal.Journal, *admission.Controller) {
	t.Helper()
	var j *journal.Journal
	var ctrl *admission.Controller
	fc.Deps = map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"},
		Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}}}
	fc.Callbacks = callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge"}}}
	fc.Prepare = func(f *callbackstest.Fixture, cfg *callbacks.Config) {
		var err error
		j, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}, Clock: f.Clock})
		require.NoError(t, err)
		t.Cleanup(func() { _ = j.Close() })
		ctrl = admission.MustNew(admission.Config{Map: f.Deps, Journal: j, Clock: f.Clock, Sleeper: &retry.FakeSleeper{Clock: f.Clock},
			Replay: replayTo(srv.URL + "/charge")})
		cfg.SideEffects.Retry = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: f.Clock})
		cfg.SideEffects.Journal, cfg.SideEffects.Admission = j, ctrl
		cfg.SideEffects.QueueTools = map[string]callbacks.QueueTool{"charge": {MaxWait: time.Hour}}
	}
	fc.ToolsOf = func(f *callbackstest.Fixture) []tool.Tool {
		return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "charge", http.MethodPost, srv.URL+"/charge"))}
	}
	f := callbackstest.New(t, fc)
	return f, j, ctrl
}

// recover closes payments' breaker the way traffic would: the cooldown passes and a
// probe succeeds.
func recoverBreaker(t *testing.T, f *callbackstest.Fixture) {
	t.Helper()
	f.Clock.Advance(31 * time.Second)
	b := f.Breaker(t, "payments")
	if b.State() == breaker.Closed {
		return
	}
	p, err := b.Allow()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, breaker.Closed, b.State())
}

// TestUnknownChargeIsNotQueuedTwice is issue 14a's double charge: the first charge is
// applied but its answer lost (UNKNOWN), which trips the breaker; the model's
// identical re-issue is answered "outcome unknown" instead of "queued", so after the
// dependency recovers nothing is replayed: one request and one charge at the server.
func TestUnknownChargeIsNotQueuedTwice(t *testing.T) {
	t.Parallel()
	srv := newPaymentsServer(t, true)
	args := map[string]any{"amount": 42, "to": "acct-7"}
	f, j, ctrl := queueFixture(t, srv, callbackstest.Config{Steps: []breakertest.Step{
		breakertest.Call("charge", args), breakertest.Call("charge", args), breakertest.Text("done"),
	}})
	turn := f.Run(t, "pay acct-7 42")
	require.Equal(t, []any{payloads.TypeOutcomeUnknown, payloads.TypeOutcomeUnknown}, responseTypes(turn))
	require.Equal(t, breaker.Open, f.Breaker(t, "payments").State(), "the UNKNOWN outcome counted")
	require.Empty(t, f.Events.Of(callbacks.EventQueued), "not queued")

	recoverBreaker(t, f)
	rep, err := ctrl.Drain(t.Context(), "payments")
	require.NoError(t, err)
	require.Zero(t, rep.Replayed)
	keys, charges := srv.requests()
	require.Len(t, keys, 1, "one request reached the payments server")
	require.Equal(t, 1, charges)
	items, err := j.Queued(t.Context(), "", 0)
	require.NoError(t, err)
	require.Empty(t, items)
	f.RequireClean(t)
}

// TestQueuedChargeKeepsItsOperationsKey is issue 14a's second half: a charge queued
// while payments is down carries its operation's idempotency key, so when the model
// sends the same charge again after recovery and the queue replays it too, the server
// sees one key twice and charges once.
func TestQueuedChargeKeepsItsOperationsKey(t *testing.T) {
	t.Parallel()
	srv := newPaymentsServer(t, false)
	args := map[string]any{"amount": 42, "to": "acct-7"}
	var f *callbackstest.Fixture
	step := 0
	f, _, ctrl := queueFixture(t, srv, callbackstest.Config{Then: func(breakertest.Request) breakertest.Step {
		step++
		switch step {
		case 1:
			return breakertest.Call("charge", args) // queued: payments is down
		case 2:
			recoverBreaker(t, f) // the cooldown passes; this call is the probe
			return breakertest.Call("charge", args)
		}
		return breakertest.Text("done")
	}})
	b := f.Breaker(t, "payments")
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, breaker.Open, b.State())

	turn := f.Run(t, "pay acct-7 42")
	frs := turn.FunctionResponses()
	require.Len(t, frs, 2)
	require.Equal(t, callbacks.TypeQueued, frs[0].Response[payloads.KeyResponseType])
	require.Equal(t, "ok", frs[1].Response["status"])

	rep, err := ctrl.Drain(t.Context(), "payments")
	require.NoError(t, err)
	require.Equal(t, 1, rep.Replayed)
	keys, charges := srv.requests()
	require.Len(t, keys, 2, "the model's call and the queue's replay")
	require.Equal(t, keys[0], keys[1], "the queued item carries its operation's key")
	require.Equal(t, 1, charges, "charged once")
	f.RequireClean(t)
}
