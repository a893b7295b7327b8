package httptransport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

// post returns a retry.Func that POSTs body to url through cli.
func post(cli *http.Client, url, body string) retry.Func {
	return func(ctx context.Context, a retry.Info) (classify.Classification, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return classify.Classification{}, err
		}
		resp, err := cli.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return httptransport.Classify(ctx, resp, err), err
	}
}

func newRetrier(f *fixture, cfg retry.Config) (*retry.Retrier, *retry.FakeSleeper) {
	sl := &retry.FakeSleeper{Clock: f.clk}
	cfg.Clock, cfg.Sleeper = f.clk, sl
	if cfg.Budgets == nil {
		cfg.Budgets = retry.MustNewBudgets(retry.BudgetConfig{Clock: f.clk, MinRetriesPerSecond: 10})
	}
	return retry.MustNew(cfg), sl
}

func TestMutationWithUnknownOutcomeIsSentOnce(t *testing.T) {
	srv := newResetServer(t, true)
	f := newFixture(t, srv.addr(), breaker.Policy{}, nil)
	r, _ := newRetrier(f, retry.Config{})
	res := r.Do(t.Context(), retry.Operation{Dependency: "api", Tool: "create_order"}, post(f.cli, "http://"+srv.addr()+"/orders", "o-1"))
	require.Equal(t, classify.Unknown, res.Outcome)
	require.Equal(t, retry.ReasonUnknownOutcome, res.Reason)
	got := srv.received()
	require.Len(t, got, 1, "the server saw exactly one request")
	require.Equal(t, res.IdempotencyKey, got[0].key)
}

func TestIdempotentOperationIsRetriedWithOneKey(t *testing.T) {
	srv := newResetServer(t, true)
	f := newFixture(t, srv.addr(), breaker.Policy{}, nil)
	r, _ := newRetrier(f, retry.Config{})
	res := r.Do(t.Context(), retry.Operation{Dependency: "api", Tool: "put_doc", Idempotent: true}, post(f.cli, "http://"+srv.addr()+"/doc", "d"))
	require.Equal(t, classify.Unknown, res.Outcome)
	require.Equal(t, retry.ReasonAttemptsExhausted, res.Reason)
	got := srv.received()
	require.Len(t, got, 3)
	for _, g := range got {
		require.Equal(t, res.IdempotencyKey, g.key, "every attempt carries the operation's key")
	}
}

func TestRetryAfterFloorEndToEnd(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, nil)
	r, sl := newRetrier(f, retry.Config{})
	res := r.Do(t.Context(), retry.Operation{Dependency: "api"}, post(f.cli, srv.URL, ""))
	require.Equal(t, classify.Succeeded, res.Outcome)
	require.EqualValues(t, 2, hits.Load())
	require.Equal(t, []time.Duration{7 * time.Second}, sl.Slept())
}

func TestOpenBreakerEndsTheOperationWithoutSending(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 2}, nil)
	var states []string
	r, _ := newRetrier(f, retry.Config{Policy: retry.Policy{MaxAttempts: 5},
		OnAttempt: []func(context.Context, retry.Event){func(_ context.Context, e retry.Event) { states = append(states, e.BreakerState) }}})
	res := r.Do(t.Context(), retry.Operation{Dependency: "api"}, post(f.cli, srv.URL, ""))
	require.Equal(t, classify.FailedBeforeSend, res.Outcome)
	require.Equal(t, retry.ReasonBreakerOpen, res.Reason)
	require.EqualValues(t, 2, hits.Load(), "two 503s trip the breaker; the third attempt never leaves")
	require.Equal(t, 3, res.Attempts, "the third attempt ran and was refused by the transport")
	require.Equal(t, []string{"closed", "closed", "open"}, states)
}

// TestRetryStormAgainstADownServer: many callers, a server answering 503, retries held
// to the dependency's budget, counted by the server itself.
func TestRetryStormAgainstADownServer(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	// A breaker that never trips here, so the budget alone holds the retries back.
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 100000}, nil)
	budgets := retry.MustNewBudgets(retry.BudgetConfig{Clock: f.clk})
	r, _ := newRetrier(f, retry.Config{Budgets: budgets})
	const callers = 120
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			r.Do(t.Context(), retry.Operation{Dependency: "api", Tool: "search"}, post(f.cli, srv.URL, ""))
		})
	}
	wg.Wait()
	b, err := budgets.For("api")
	require.NoError(t, err)
	st := b.Stats()
	require.LessOrEqual(t, st.Granted, int64(callers/10+1))
	require.EqualValues(t, callers+st.Granted, hits.Load(), "the server saw each operation once plus the budgeted retries")
	require.Less(t, int(hits.Load()), callers*3/2, "without the budget it would have been %d", callers*3)
}
