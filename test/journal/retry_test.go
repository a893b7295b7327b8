package journal_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func TestRetryWithJournalAndOperatorApproval(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t)) // no status lookup: UNKNOWN waits for an operator
		r := retry.MustNew(retry.Config{Journal: j.ForRetry(), Sleeper: &retry.FakeSleeper{}})
		op := retry.Operation{Dependency: "mail", Tool: "send_email", Args: map[string]any{"to": "a@example.com"},
			Reconcile: j.Reconciler()}
		attempt := func(c classify.Class) (retry.Decision, error) {
			run, _, err := r.Track("inv-1", op)
			require.NoError(t, err)
			a, err := run.Admit(t.Context())
			if err != nil {
				return retry.Decision{}, err
			}
			return a.Finish(t.Context(), classify.ForClass(c), nil), nil
		}

		d, err := attempt(classify.ClassTimeout)
		require.NoError(t, err)
		require.Equal(t, retry.ReasonUnknownOutcome, d.Reason)
		pending, err := j.Pending(t.Context())
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.Equal(t, journal.StateAwaitingOperator, pending[0].State)
		require.Equal(t, classify.Unknown, pending[0].Outcome)
		hash, _, err := j.HashArgs(op.Args)
		require.NoError(t, err)
		un, err := j.Unresolved(t.Context(), "send_email", hash)
		require.NoError(t, err)
		require.Len(t, un, 1)

		// The model asks again: refused, nothing sent.
		_, err = attempt(classify.ClassNone)
		var se *retry.StopError
		require.ErrorAs(t, err, &se)
		require.Equal(t, retry.ReasonUnknownOutcome, se.Reason)

		// An operator approves (say, after checking the mail server's logs).
		require.NoError(t, j.Approve(t.Context(), pending[0].ID))
		d, err = attempt(classify.ClassNone)
		require.NoError(t, err)
		require.Equal(t, retry.ReasonSucceeded, d.Reason)

		all, err := j.Intents(t.Context(), journal.Filter{Tool: "send_email"})
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, journal.StateApproved, all[0].State)
		require.Equal(t, 1, all[0].Attempt)
		require.Equal(t, journal.StateSucceeded, all[1].State)
		require.Equal(t, 2, all[1].Attempt)
		require.Equal(t, all[0].IdempotencyKey, all[1].IdempotencyKey, "the replay carries the same key")
		r.Forget("inv-1")
	})
}

func TestRetryReconcilesUnknownThroughTheLookup(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(context.Context, journal.Intent) (journal.Status, error) {
			return journal.StatusNotApplied, nil
		}}
		j := journaltest.Open(t, cfg)
		r := retry.MustNew(retry.Config{Journal: j.ForRetry(), Sleeper: &retry.FakeSleeper{}})
		calls := 0
		res := r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "update", Reconcile: j.Reconciler()},
			func(ctx context.Context, a retry.Info) (classify.Classification, error) {
				calls++
				if calls == 1 {
					return classify.ForClass(classify.ClassConnectionReset), nil
				}
				return classify.ForClass(classify.ClassNone), nil
			})
		require.Equal(t, classify.Succeeded, res.Outcome)
		require.Equal(t, 2, calls)
		all, err := j.Intents(t.Context(), journal.Filter{RequestID: res.RequestID})
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, journal.StateNotApplied, all[0].State)
		require.Equal(t, journal.StateSucceeded, all[1].State)
	})
}

// paymentsServer applies a charge once per idempotency key, then drops the connection
// before answering, so the caller cannot know; a status endpoint tells the truth.
type paymentsServer struct {
	*httptest.Server
	mu      sync.Mutex
	charges int
	applied map[string]bool
}

func newPaymentsServer(t *testing.T) *paymentsServer {
	s := &paymentsServer{applied: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charge", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		s.mu.Lock()
		s.charges++
		s.applied[r.Header.Get("Idempotency-Key")] = true
		s.mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
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

func (s *paymentsServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.charges
}

// TestUnknownChargeIsJournaledAndSettledAfterRestart follows one side-effecting call
// through a real HTTP server: its outcome is UNKNOWN, so it is journaled and not
// retried; after a restart the status lookup settles it; the server saw one charge.
func TestUnknownChargeIsJournaledAndSettledAfterRestart(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		srv := newPaymentsServer(t)
		u, _ := url.Parse(srv.URL)
		fc := clock.NewFake(time.Time{})
		m := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
			"payments": {Hosts: []string{u.Host}},
		}})
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: base, Map: m, Clock: fc})}

		cfg := b.Config(t)
		cfg.Clock = fc
		j1, err := journal.Open(t.Context(), cfg)
		require.NoError(t, err)
		r := retry.MustNew(retry.Config{Journal: j1.ForRetry(), Clock: fc, Sleeper: &retry.FakeSleeper{Clock: fc}})
		res := r.Do(t.Context(), retry.Operation{Dependency: "payments", Tool: "charge", Args: map[string]any{"amount": 42},
			Reconcile: j1.Reconciler()},
			func(ctx context.Context, a retry.Info) (classify.Classification, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/charge", strings.NewReader(`{"amount":42}`))
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				return httptransport.Classify(ctx, resp, err), err
			})
		require.Equal(t, classify.Unknown, res.Outcome)
		require.Equal(t, retry.ReasonUnknownOutcome, res.Reason)
		require.Equal(t, 1, srv.count(), "not retried")
		pending, err := j1.Pending(t.Context())
		require.NoError(t, err)
		require.Len(t, pending, 1, "no lookup in this process: it waits")
		require.NoError(t, j1.Close()) // the process stops

		fc.Advance(5 * time.Minute)
		cfg.Lookups = map[string]journal.StatusLookup{"payments": journaltest.StatusLookup(http.DefaultClient, srv.URL)}
		j2 := journaltest.Open(t, cfg)
		rep, err := j2.Reconcile(t.Context())
		require.NoError(t, err)
		require.Len(t, rep.Applied, 1)
		require.Equal(t, res.IdempotencyKey, rep.Applied[0].IdempotencyKey)
		pending, err = j2.Pending(t.Context())
		require.NoError(t, err)
		require.Empty(t, pending)
		require.Equal(t, 1, srv.count())
		http.DefaultClient.CloseIdleConnections()
	})
}

// TestReadThatSucceededOnRetryLeavesNoBacklog is issue 18f: a read whose first attempt
// timed out (UNKNOWN) and whose retry succeeded leaves nothing for reconciliation: the
// first attempt's intent is superseded, and the backlog is empty.
func TestReadThatSucceededOnRetryLeavesNoBacklog(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		r := retry.MustNew(retry.Config{Journal: j.ForRetry(), JournalAll: true, Sleeper: &retry.FakeSleeper{}})
		calls := 0
		res := r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "lookup_customer", Args: map[string]any{"id": 7},
			Idempotent: true, Reconcile: j.Reconciler()}, func(context.Context, retry.Info) (classify.Classification, error) {
			calls++
			if calls == 1 {
				return classify.ForClass(classify.ClassTimeout), context.DeadlineExceeded
			}
			return classify.ForClass(classify.ClassNone), nil
		})
		require.Equal(t, retry.ReasonSucceeded, res.Reason)
		require.Equal(t, 2, calls)
		n, _, err := j.Backlog(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "nothing waits for reconciliation")
		all, err := j.Intents(t.Context(), journal.Filter{Tool: "lookup_customer"})
		require.NoError(t, err)
		require.Len(t, all, 2)
		slices.SortFunc(all, func(a, b journal.Intent) int { return a.Attempt - b.Attempt }) // not by time: both may share a microsecond
		require.Equal(t, journal.StateSuperseded, all[0].State)
		require.Equal(t, "a later attempt of the same operation ("+all[1].ID+") succeeded", all[0].Note)
		require.Equal(t, journal.StateSucceeded, all[1].State)
	})
}
