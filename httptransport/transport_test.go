package httptransport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func outcomeOf(t *testing.T, err error) classify.Classification {
	t.Helper()
	var e *httptransport.Error
	require.ErrorAs(t, err, &e)
	return e.Classification
}

func TestRefusedConnectionIsFailedBeforeSend(t *testing.T) {
	addr := refusedAddr(t)
	f := newFixture(t, addr, breaker.Policy{MinimumCalls: 1}, nil)
	_, err := f.cli.Post("http://"+addr+"/orders", "text/plain", strings.NewReader("x"))
	c := outcomeOf(t, err)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, classify.ClassConnectionRefused, c.Class)
	r := f.result()
	require.False(t, r.Connected)
	require.False(t, r.Wrote)
	require.Equal(t, "api", r.Dependency)
	require.Equal(t, breaker.Open, f.b.State(), "a refused connection counts against the dependency")
}

func TestHangThenOurTimeoutIsUnknown(t *testing.T) {
	srv, arrived := hangServer(t)
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 1}, func(c *httptransport.Config) { c.Timeout = 5 * time.Second })
	errc := make(chan error, 1)
	go func() {
		resp, err := f.cli.Post(srv.URL+"/orders", "text/plain", strings.NewReader("order"))
		if resp != nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	require.Equal(t, 5*time.Second, <-f.timer.started)
	<-arrived // the server has the whole request
	f.timer.fire()
	err := <-errc
	c := outcomeOf(t, err)
	require.Equal(t, classify.Unknown, c.Outcome)
	require.Equal(t, classify.ClassTimeout, c.Class)
	require.Equal(t, classify.Counts, c.Verdict)
	require.ErrorIs(t, err, httptransport.ErrTimeout)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
	require.Equal(t, breaker.Open, f.b.State(), "our own timeout counts")
	r := f.result()
	require.True(t, r.Connected)
	require.True(t, r.Wrote)
}

func TestHangThenCallerGivesUpIsNeutral(t *testing.T) {
	srv, arrived := hangServer(t)
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 1}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader("order"))
		_, err := f.cli.Do(req)
		errc <- err
	}()
	<-arrived
	cancel()
	c := outcomeOf(t, <-errc)
	require.Equal(t, classify.Unknown, c.Outcome, "the server had the request")
	require.Equal(t, classify.ClassCanceled, c.Class)
	require.Equal(t, classify.Neutral, c.Verdict)
	require.Equal(t, breaker.Closed, f.b.State())
	require.Zero(t, f.b.Snapshot().Window.Calls, "the caller giving up says nothing about the dependency")
}

func TestTimeoutWhileConnectingIsFailedBeforeSend(t *testing.T) {
	dialing := make(chan struct{}, 10)
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	f := newFixture(t, "slow.test:80", breaker.Policy{MinimumCalls: 1}, func(c *httptransport.Config) {
		c.Timeout = 2 * time.Second
		c.Base = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			dialing <- struct{}{}
			select { // a dial that never completes on its own
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-quit:
				return nil, errors.New("test over")
			}
		}}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := f.cli.Get("http://slow.test:80/")
		errc <- err
	}()
	<-dialing
	<-f.timer.started
	f.timer.fire()
	c := outcomeOf(t, <-errc)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, classify.ClassConnectTimeout, c.Class)
	require.Equal(t, breaker.Open, f.b.State())
}

func TestResetBeforeReadingIsUnknown(t *testing.T) {
	srv := newResetServer(t, false)
	f := newFixture(t, srv.addr(), breaker.Policy{MinimumCalls: 1}, nil)
	_, err := f.cli.Post("http://"+srv.addr()+"/orders", "text/plain", strings.NewReader("order"))
	c := outcomeOf(t, err)
	require.Equal(t, classify.Unknown, c.Outcome, "the request was handed to the connection; nothing proves the server ignored it")
	require.Contains(t, []classify.Class{classify.ClassConnectionReset, classify.ClassTransport}, c.Class)
	require.Equal(t, classify.Counts, c.Verdict)
	require.EqualValues(t, 1, srv.accepted.Load())
	require.True(t, f.result().Wrote)
}

func TestResetAfterReadingIsUnknown(t *testing.T) {
	srv := newResetServer(t, true)
	f := newFixture(t, srv.addr(), breaker.Policy{MinimumCalls: 1}, nil)
	_, err := f.cli.Post("http://"+srv.addr()+"/orders", "text/plain", strings.NewReader("order-17"))
	c := outcomeOf(t, err)
	require.Equal(t, classify.Unknown, c.Outcome)
	require.Contains(t, []classify.Class{classify.ClassConnectionReset, classify.ClassTransport}, c.Class)
	got := srv.received()
	require.Len(t, got, 1)
	require.Equal(t, "order-17", string(got[0].body))
	require.Equal(t, breaker.Open, f.b.State())
}

func TestStatusCodes(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		retryAfter  string
		wantOutcome classify.Outcome
		wantClass   classify.Class
		wantAfter   time.Duration
		wantFailure bool
	}{
		{"ok", 200, "", classify.Succeeded, classify.ClassNone, 0, false},
		{"not found is healthy", 404, "", classify.Failed, classify.ClassNotFound, 0, false},
		{"429 with seconds", 429, "7", classify.Failed, classify.ClassHTTP429, 7 * time.Second, true},
		{"429 with a date", 429, "Thu, 01 Jan 2026 00:02:00 GMT", classify.Failed, classify.ClassHTTP429, 2 * time.Minute, true},
		{"429 without Retry-After", 429, "", classify.Failed, classify.ClassHTTP429, 0, true},
		{"503 refused the work", 503, "", classify.Failed, classify.ClassHTTP5xx, 0, true},
		{"500 may have applied it", 500, "", classify.Unknown, classify.ClassHTTP5xx, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, "body")
			}))
			defer srv.Close()
			f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 5}, nil)
			resp, err := f.cli.Get(srv.URL)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, "body", string(b))
			c, ok := httptransport.ClassificationOf(resp, nil)
			require.True(t, ok)
			require.Equal(t, tt.wantOutcome, c.Outcome)
			require.Equal(t, tt.wantClass, c.Class)
			require.Equal(t, tt.wantAfter, c.RetryAfter)
			require.Equal(t, tt.status, c.StatusCode)
			w := f.b.Snapshot().Window
			require.EqualValues(t, 1, w.Calls)
			require.Equal(t, tt.wantFailure, w.Failures == 1)
			require.Equal(t, c, httptransport.Classify(t.Context(), resp, nil))
		})
	}
}

func TestRetryAfterIsTheBreakersFloor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second}, nil)
	resp, err := f.cli.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, breaker.Open, f.b.State())
	require.Equal(t, 120*time.Second, f.b.RetryAfter(), "the server's 120s beats the 30s cooldown")
}

func TestOpenBreakerStopsTheDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	dials := 0
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) {
		c.Base = &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
			dials++
			return (&net.Dialer{}).DialContext(ctx, n, a)
		}}
	})
	f.b.ForceOpen("maintenance")
	_, err := f.cli.Get(srv.URL)
	require.ErrorIs(t, err, breaker.ErrOpen)
	c := outcomeOf(t, err)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, classify.ClassBreakerOpen, c.Class)
	require.Equal(t, classify.Neutral, c.Verdict)
	require.Zero(t, dials)
	require.Zero(t, hits.Load())
	require.Equal(t, "forced_open", f.result().BreakerState)
}

func TestBulkhead(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	defer srv.Close()
	defer close(release)
	sem := newSemaphore(1)
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) {
		c.Bulkheads = map[string]httptransport.Bulkhead{"api": sem}
	})
	resp, err := f.cli.Get(srv.URL)
	require.NoError(t, err)
	require.Equal(t, 1, sem.inUse(), "the slot is held while the body is being read")
	f.result()

	_, err = f.cli.Get(srv.URL)
	c := outcomeOf(t, err)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, classify.ClassBulkheadFull, c.Class)
	require.Equal(t, classify.Counts, c.Verdict)
	require.ErrorIs(t, err, errFull)
	res := f.result()
	require.Equal(t, classify.FailedBeforeSend, res.Classification.Outcome, "the hook sees it as never sent")
	require.False(t, res.Wrote)
	require.Equal(t, breaker.Counts{Calls: 2, Failures: 1}, f.b.Snapshot().Window,
		"a full bulkhead counts as a failure: the dependency is slow")

	release <- struct{}{}
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "done", string(b))
	require.Zero(t, sem.inUse(), "reading to the end frees the slot")
	require.NoError(t, resp.Body.Close())
}

func TestIdempotencyKeyHeader(t *testing.T) {
	keys := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key") + "|" + r.Header.Get("X-Op")
	}))
	defer srv.Close()
	send := func(cli *http.Client, ctx context.Context, preset string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		if preset != "" {
			req.Header.Set("Idempotency-Key", preset)
		}
		resp, err := cli.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Empty(t, req.Header.Get("X-Op"), "the caller's request is not modified")
	}
	ctx := retry.WithIdempotencyKey(t.Context(), "K1")
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, nil)
	send(f.cli, ctx, "")
	require.Equal(t, "K1|", <-keys)
	send(f.cli, ctx, "mine")
	require.Equal(t, "mine|", <-keys, "a key the tool set itself wins")
	send(f.cli, t.Context(), "")
	require.Equal(t, "|", <-keys, "no key, no header")

	g := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) { c.IdempotencyHeader = "X-Op" })
	send(g.cli, ctx, "")
	require.Equal(t, "|K1", <-keys)
	h := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) { c.IdempotencyHeader = "-" })
	send(h.cli, ctx, "")
	require.Equal(t, "|", <-keys)
}

func TestHostMapping(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	t.Run("by host name without the port", func(t *testing.T) {
		f := newFixture(t, "127.0.0.1", breaker.Policy{}, nil)
		resp, err := f.cli.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "api", f.result().Dependency)
		require.EqualValues(t, 1, f.b.Snapshot().Window.Calls)
	})
	t.Run("unmapped host is classified but unguarded", func(t *testing.T) {
		f := newFixture(t, "elsewhere:1", breaker.Policy{}, nil)
		resp, err := f.cli.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		r := f.result()
		require.Empty(t, r.Dependency)
		require.Empty(t, r.BreakerState)
		require.Equal(t, classify.Succeeded, r.Classification.Outcome)
		require.Zero(t, f.b.Snapshot().Window.Calls)
	})
}

func TestCallersTraceStillRuns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, nil)
	var got atomic.Bool
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got.Store(true) }})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := f.cli.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.True(t, got.Load())
}

func TestTimerStopsWhenTheBodyIsClosed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "x") }))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) { c.Timeout = time.Minute })
	resp, err := f.cli.Get(srv.URL)
	require.NoError(t, err)
	require.Equal(t, 1, f.timer.live(), "the timer covers reading the body")
	require.NoError(t, resp.Body.Close())
	require.Zero(t, f.timer.live())
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     httptransport.Config
		wantErr string
	}{
		{"negative timeout", httptransport.Config{Timeout: -time.Second}, "httptransport: Timeout = -1s: must be between 0 (none) and 24h"},
		{"bad header", httptransport.Config{IdempotencyHeader: "Idem Key"}, `IdempotencyHeader = Idem Key: is not a valid header name`},
		{"nil bulkhead", httptransport.Config{Bulkheads: map[string]httptransport.Bulkhead{"crm": nil}}, `Bulkheads["crm"] = nil`},
		{"nil hook", httptransport.Config{OnResult: []func(httptransport.Result){nil}}, "OnResult[0] = nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httptransport.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
			var ce *httptransport.ConfigError
			require.True(t, errors.As(err, &ce))
			require.Panics(t, func() { httptransport.MustNew(tt.cfg) })
		})
	}
}

func TestBulkheadOfReleasesOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	s := &slots{free: 1}
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{}, func(c *httptransport.Config) {
		c.Bulkheads = map[string]httptransport.Bulkhead{"api": httptransport.BulkheadOf(s)}
	})
	for range 3 {
		resp, err := f.cli.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body) // EOF releases...
		require.NoError(t, resp.Body.Close())
		require.Equal(t, 1, s.free, "...and Close does not release again")
	}
	require.Equal(t, 3, s.taken)

	s.free = 0
	_, err := f.cli.Get(srv.URL)
	c := outcomeOf(t, err)
	require.Equal(t, classify.ClassBulkheadFull, c.Class, "the bulkhead's own LocalRejection is kept")
	require.ErrorAs(t, err, new(fullErr))
}

// A dependency that stated a delay is held for it, as at every hop of the call path:
// a second request inside the delay is answered locally with the answer's class and
// reaches nothing, even with the breaker closed; after the delay it is sent.
func TestStatedDelayHoldsTheHost(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "20")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	f := newFixture(t, hostOf(t, srv.URL), breaker.Policy{MinimumCalls: 100}, nil)
	resp, err := f.cli.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, breaker.Closed, f.b.State())

	f.clk.Advance(19 * time.Second)
	_, err = f.cli.Get(srv.URL)
	c := outcomeOf(t, err)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, classify.ClassHTTP429, c.Class)
	require.Equal(t, classify.Neutral, c.Verdict)
	require.EqualValues(t, 1, hits.Load(), "the held request reached the server")

	f.clk.Advance(time.Second)
	resp, err = f.cli.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.EqualValues(t, 2, hits.Load())
}

// TestMutationIsNotResentByNetHTTP (found by the soak): a POST carrying the
// operation's Idempotency-Key, written on a reused keep-alive connection that dies
// before the answer, reaches the server once and is UNKNOWN. net/http takes the header
// as leave to send it again on a new connection, which nothing above the transport
// would see.
func TestMutationIsNotResentByNetHTTP(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		_, _ = io.ReadAll(r.Body)
		posts.Add(1) // applied; now the answer is lost
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}))
	defer srv.Close()
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: &http.Transport{}})}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL) // leaves a keep-alive connection, as any busy tool has
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())

	for _, body := range []io.Reader{strings.NewReader(`{"op":"7"}`), nil} {
		posts.Store(0)
		ctx := retry.WithIdempotencyKey(context.Background(), "op-7")
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", body)
		require.NoError(t, err)
		_, err = client.Do(req)
		require.Error(t, err, "the order's answer was lost, yet the call succeeded")
		c := outcomeOf(t, err)
		require.Equal(t, classify.Unknown, c.Outcome)
		require.EqualValues(t, 1, posts.Load(), "the order reached the service more than once in one round trip")
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
}
