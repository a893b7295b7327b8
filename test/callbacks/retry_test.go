package callbacks_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

// dropServer is a real local dependency. POST /charge applies a charge (remembered by
// its idempotency key) and then drops the connection without answering, so the caller
// cannot know; GET /status?key= tells the truth; GET /lookup answers from a script of
// "drop" and "ok". Every request's Idempotency-Key header is recorded.
type dropServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string // Idempotency-Key of every /charge and /lookup request
	charges int
	lookups int
	applied map[string]bool
	script  []string // answers of /lookup, in order; "ok" when exhausted
}

func newDropServer(t *testing.T, script ...string) *dropServer {
	t.Helper()
	s := &dropServer{applied: map[string]bool{}, script: script}
	drop := func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charge", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get(httptransport.DefaultIdempotencyHeader)
		s.mu.Lock()
		s.charges++
		s.keys = append(s.keys, key)
		s.applied[key] = true
		s.mu.Unlock()
		drop(w)
	})
	mux.HandleFunc("GET /lookup", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.lookups++
		s.keys = append(s.keys, r.Header.Get(httptransport.DefaultIdempotencyHeader))
		answer := "ok"
		if len(s.script) > 0 {
			answer, s.script = s.script[0], s.script[1:]
		}
		s.mu.Unlock()
		if answer == "drop" {
			drop(w)
			return
		}
		_, _ = w.Write([]byte(`{"price": 10}`))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]bool{"applied": s.applied[r.URL.Query().Get("key")]})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *dropServer) counts() (charges, lookups int, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.charges, s.lookups, append([]string(nil), s.keys...)
}

// httpTool is a real tool: it sends method to url with a client whose transport is
// agentbreaker's (which sends the idempotency key found in the call's context), and
// returns transport failures as errors.
func httpTool(t *testing.T, name, method, u string) tool.Tool {
	t.Helper()
	base := &http.Transport{DisableKeepAlives: true} // a dropped connection is never retried on a reused one
	t.Cleanup(base.CloseIdleConnections)
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: base})}
	return callbackstest.FnTool(t, name, func(ctx agent.Context, args map[string]any) (map[string]any, error) {
		body, _ := json.Marshal(args)
		req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(string(body)))
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": "ok", "body": string(b)}, nil
	})
}

func responseTypes(turn *breakertest.Turn) []any {
	var out []any
	for _, fr := range turn.FunctionResponses() {
		out = append(out, fr.Response["response_type"])
	}
	return out
}

// TestRetryUnknownMutationJournaledNotRetriedAndSettledAfterRestart follows a charge
// through the real runner: the server applies it and drops the connection, so its
// outcome is UNKNOWN. The intent is in the journal, the model is told the outcome is
// unknown, and its identical re-issue is refused without reaching the server. After a
// restart the status lookup settles the intent as applied.
func TestRetryUnknownMutationJournaledNotRetriedAndSettledAfterRestart(t *testing.T) {
	t.Parallel()
	srv := newDropServer(t)
	path := filepath.Join(t.TempDir(), "journal.db")
	var f *callbackstest.Fixture
	var j1 *journal.Journal
	rec := &callbackstest.Attempts{}
	var r *retry.Retrier
	args := map[string]any{"amount": 42, "to": "acct-7"}
	f = callbackstest.New(t, callbackstest.Config{
		Steps: []breakertest.Step{
			breakertest.Call("charge", args),
			breakertest.Call("charge", args), // the model repeats it
			breakertest.Text("done"),
		},
		Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			var err error
			j1, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: path}, Clock: f.Clock})
			require.NoError(t, err)
			r = retry.MustNew(retry.Config{Journal: j1.ForRetry(), Clock: f.Clock, OnAttempt: []func(context.Context, retry.Event){rec.Add}})
			cfg.SideEffects.Retry, cfg.SideEffects.Journal = r, j1
		},
		ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
			return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "charge", http.MethodPost, srv.URL+"/charge"))}
		},
	})
	turn := f.Run(t, "pay acct-7 42")

	charges, _, keys := srv.counts()
	require.Equal(t, 1, charges, "the mutation reached the server once")
	require.Equal(t, []any{payloads.TypeOutcomeUnknown, payloads.TypeOutcomeUnknown}, responseTypes(turn))
	for _, fr := range turn.FunctionResponses() {
		require.Equal(t, payloads.StatusOutcomeUnknown, fr.Response["status"])
		require.Equal(t, false, fr.Response["retry_advised"])
		require.Contains(t, fr.Response["instruction"], "Do not repeat this action")
	}
	refused := f.Events.Of(callbacks.EventRetryRefused)
	require.Len(t, refused, 1)
	require.Equal(t, retry.ReasonUnknownOutcome, refused[0].RetryReason)

	// One attempt was made; the re-issue was refused as the same, ended operation.
	recs := rec.List()
	require.Len(t, recs, 1)
	require.Equal(t, classify.Unknown, recs[0].Outcome)
	require.Equal(t, retry.ReasonUnknownOutcome, recs[0].Stop)
	require.True(t, recs[0].Dispatched)
	require.NotEmpty(t, recs[0].IntentID)

	intents, err := j1.Intents(t.Context(), journal.Filter{Tool: "charge"})
	require.NoError(t, err)
	require.Len(t, intents, 1, "journaled once")
	in := intents[0]
	require.Equal(t, journal.StateAwaitingOperator, in.State, "no status lookup in this process: it waits")
	require.Equal(t, classify.Unknown, in.Outcome)
	require.Equal(t, []string{in.IdempotencyKey}, keys, "the tool sent the operation's idempotency key")
	hash, _, err := j1.HashArgs(args)
	require.NoError(t, err)
	require.Equal(t, hash, in.ArgsHash)
	require.Zero(t, r.Tracking(), "Forget ran at the end of the run")
	f.RequireClean(t)
	require.NoError(t, j1.Close()) // the process stops

	f.Clock.Advance(5 * time.Minute)
	j2, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: path}, Clock: f.Clock,
		Lookups: map[string]journal.StatusLookup{"payments": journaltest.StatusLookup(srv.Client(), srv.URL)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j2.Close() })
	rep, err := j2.Reconcile(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.Applied, 1)
	require.Equal(t, in.ID, rep.Applied[0].ID)
	pending, err := j2.Pending(t.Context())
	require.NoError(t, err)
	require.Empty(t, pending)
	charges, _, _ = srv.counts()
	require.Equal(t, 1, charges, "reconciliation did not resend the charge")
}

// TestRetryModelReissuesShareOneOperation shows the model's identical re-issues in one
// invocation are one logical operation: attempts of one request id and one idempotency
// key, held to the attempt cap and to the dependency's retry budget.
func TestRetryModelReissuesShareOneOperation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		budget       retry.BudgetConfig
		wantRequests int
		wantReason   retry.Reason
	}{
		// A generous budget: the read is retried up to MaxAttempts (3), then refused.
		{name: "attempts cap", budget: retry.BudgetConfig{MinRetriesPerSecond: 1}, wantRequests: 3, wantReason: retry.ReasonAttemptsExhausted},
		// The default budget of a quiet dependency allows one retry per 10s window.
		{name: "retry budget", wantRequests: 2, wantReason: retry.ReasonBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newDropServer(t, "drop", "drop", "drop", "drop")
			rec := &callbackstest.Attempts{}
			var r *retry.Retrier
			args := map[string]any{"sku": "A-1"}
			call := breakertest.Call("lookup_price", args)
			f := callbackstest.New(t, callbackstest.Config{
				Steps: []breakertest.Step{call, call, call, call, breakertest.Text("done")},
				Deps:  map[string]dependencymap.Dependency{"pricing": {Tools: []string{"lookup_price"}}},
				Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
					b := tt.budget
					b.Clock = f.Clock
					r = retry.MustNew(retry.Config{Clock: f.Clock, Budgets: retry.MustNewBudgets(b),
						OnAttempt: []func(context.Context, retry.Event){rec.Add}})
					cfg.SideEffects.Retry = r
				},
				ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
					return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "lookup_price", http.MethodGet, srv.URL+"/lookup"))}
				},
			})
			turn := f.Run(t, "price of A-1?")

			_, lookups, keys := srv.counts()
			require.Equal(t, tt.wantRequests, lookups, "requests that reached the server")
			types := responseTypes(turn)
			require.Len(t, types, 4)
			for _, rt := range types[:tt.wantRequests] {
				require.Equal(t, payloads.TypeFailed, rt, "a transport error reaches the model as the failed payload")
			}
			for _, rt := range types[tt.wantRequests:] {
				require.Equal(t, payloads.TypeBudgetExhausted, rt)
			}
			refused := f.Events.Of(callbacks.EventRetryRefused)
			require.Len(t, refused, 4-tt.wantRequests)
			require.Equal(t, tt.wantReason, refused[0].RetryReason)

			// The model asks again after the operation ended (by the budget, issue 12b, or
			// by the attempt cap): one record more, of the attempt never sent, once
			// however often it asks, with the state of the breaker that admitted it.
			recs := rec.List()
			require.Len(t, recs, tt.wantRequests+1)
			refusal := recs[len(recs)-1]
			require.Equal(t, classify.FailedBeforeSend, refusal.Outcome)
			require.False(t, refusal.Dispatched)
			require.Equal(t, tt.wantRequests+1, refusal.Attempt)
			require.Equal(t, "closed", refusal.BreakerState)
			sent := recs[:tt.wantRequests]
			for i, e := range sent {
				require.Equal(t, i+1, e.Attempt, "attempt numbers of one operation")
				require.Equal(t, recs[0].RequestID, e.RequestID, "one logical operation")
				require.Equal(t, classify.Unknown, e.Outcome)
			}
			require.Equal(t, tt.wantReason, recs[len(recs)-1].Stop)
			require.Len(t, keys, tt.wantRequests)
			for _, k := range keys {
				require.Equal(t, keys[0], k, "every attempt carried the same idempotency key")
			}
			require.NotEmpty(t, keys[0])
			require.Zero(t, r.Tracking())
			f.RequireClean(t)
		})
	}
}

func TestRetryConfigErrors(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	dir := t.TempDir()
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	// The journal given once is enough (issue 48 e): the plugin builds the Retrier on it.
	_, err = callbacks.New(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{Journal: j}})
	require.NoError(t, err)
	// A journal of another kind, which cannot give the Retrier its intents, still
	// needs the Retrier given.
	_, err = callbacks.New(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{Journal: otherJournal{j}}})
	require.ErrorContains(t, err, "Config.SideEffects.Retry = nil: is required with a Config.SideEffects.Journal that has no ForRetry method")

	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps})
	_, err = cb.WithIdempotencyKey(nil)
	require.ErrorContains(t, err, "tool is nil")
}

// otherJournal is a callbacks.Journal that is not a *journal.Journal.
type otherJournal struct{ callbacks.Journal }

// TestRetryCallStoppedByALaterPluginIsNotAnAttempt: a plugin after agentbreaker (a
// confirmation step, say) answers the first call, so the tool never ran; the model's
// repeat is the same operation's first attempt again, even with MaxAttempts 1.
func TestRetryCallStoppedByALaterPluginIsNotAnAttempt(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	send := callbackstest.FnTool(t, "send_email", func(agent.Context, map[string]any) (map[string]any, error) {
		runs.Add(1)
		return map[string]any{"status": "ok"}, nil
	})
	var stopped atomic.Bool
	confirm := callbackstest.MustPlugin(t, plugin.Config{Name: "confirm", BeforeToolCallback: func(agent.Context, tool.Tool, map[string]any) (map[string]any, error) {
		if stopped.CompareAndSwap(false, true) {
			return map[string]any{"status": "needs_confirmation"}, nil
		}
		return nil, nil
	}})
	rec := &callbackstest.Attempts{}
	args := map[string]any{"to": "a@example.com"}
	f := callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{send},
		Steps:     []breakertest.Step{breakertest.Call("send_email", args), breakertest.Call("send_email", args), breakertest.Text("done")},
		Deps:      map[string]dependencymap.Dependency{"mail": {Tools: []string{"send_email"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"send_email"}}},
		After:     []*plugin.Plugin{confirm},
		Marker:    true,
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: f.Clock, Policy: retry.Policy{MaxAttempts: 1},
				OnAttempt: []func(context.Context, retry.Event){rec.Add}})
		},
	})
	turn := f.Run(t, "send it")
	require.Equal(t, int64(1), runs.Load())
	frs := turn.FunctionResponses()
	require.Len(t, frs, 2)
	require.Equal(t, "needs_confirmation", frs[0].Response["status"])
	require.Equal(t, "ok", frs[1].Response["status"])
	require.Empty(t, f.Events.Of(callbacks.EventRetryRefused))
	recs := rec.List()
	require.Len(t, recs, 2)
	require.False(t, recs[0].Dispatched)
	require.Equal(t, 1, recs[1].Attempt)
	require.Equal(t, retry.ReasonSucceeded, recs[1].Stop)
	f.RequireClean(t)
}

// TestReadRetriedAfterTimeoutLeavesNoBacklog is issue 18f through the real runner: a
// read whose first attempt is lost after the server got it (UNKNOWN) and whose
// re-issue by the model succeeds leaves nothing in the journal's backlog: the first
// attempt is superseded by the second, which carried the same idempotency key.
func TestReadRetriedAfterTimeoutLeavesNoBacklog(t *testing.T) {
	t.Parallel()
	srv := newPaymentsServer(t, true) // drops the first request of each key
	args := map[string]any{"customer": 7}
	var j *journal.Journal
	f := callbackstest.New(t, callbackstest.Config{
		Steps: []breakertest.Step{breakertest.Call("lookup", args), breakertest.Call("lookup", args), breakertest.Text("done")},
		Deps:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			var err error
			j, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}, Clock: f.Clock})
			require.NoError(t, err)
			t.Cleanup(func() { _ = j.Close() })
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Journal: j.ForRetry(), JournalAll: true, Clock: f.Clock})
			cfg.SideEffects.Journal = j
		},
		ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
			return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "lookup", http.MethodPost, srv.URL+"/lookup"))}
		},
	})
	turn := f.Run(t, "who is customer 7?")
	frs := turn.FunctionResponses()
	require.Len(t, frs, 2)
	require.Equal(t, payloads.TypeFailed, frs[0].Response["response_type"], "the first attempt's answer was lost")
	require.Equal(t, "ok", frs[1].Response["status"], "the model's re-issue succeeded")
	keys, _ := srv.requests()
	require.Len(t, keys, 2)
	require.Equal(t, keys[0], keys[1], "one operation, one key")

	n, _, err := j.Backlog(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing for reconciliation: a read that succeeded on retry")
	intents, err := j.Intents(t.Context(), journal.Filter{Tool: "lookup"})
	require.NoError(t, err)
	require.Len(t, intents, 2)
	states := map[int]journal.State{} // by attempt: both were written at the same fake instant
	for _, in := range intents {
		states[in.Attempt] = in.State
	}
	require.Equal(t, map[int]journal.State{1: journal.StateSuperseded, 2: journal.StateSucceeded}, states)
	f.RequireClean(t)
}
