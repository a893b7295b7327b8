package classify_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
)

// These tests produce real failures on the loopback interface, so the
// classifier is checked against the errors net/http really returns, not
// only against errors built by hand.

// newClient returns a client that opens a fresh connection per request, so
// the transport's silent retry of requests on reused connections cannot
// hide a failure.
func newClient(timeout time.Duration, cfg *tls.Config) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg},
	}
}

// get performs a GET and reads the whole body, returning the first error.
func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return resp, err
}

// quiet stops the test server logging expected handshake failures.
func quiet(s *httptest.Server) *httptest.Server {
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	return s
}

// hijack returns a handler that takes over the connection and lets f
// misbehave on it.
func hijack(t *testing.T, f func(net.Conn)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		f(conn)
	})
}

// blocking returns a handler that holds each request until the client
// goes away or the test ends, announcing arrivals on the returned channel.
func blocking(t *testing.T) (http.Handler, <-chan struct{}) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}), arrived
}

func TestRealConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	_, err = get(context.Background(), newClient(0, nil), "http://"+addr+"/")
	require.Error(t, err)
	got := classify.Error(context.Background(), err)
	require.Equal(t, classify.ForClass(classify.ClassConnectionRefused), got)
}

func TestRealMidResponseFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		misdeed func(net.Conn)
		want    classify.Class
	}{
		{
			name: "reset before the response",
			misdeed: func(c net.Conn) {
				_ = c.(*net.TCPConn).SetLinger(0) // close with RST instead of FIN
				_ = c.Close()
			},
			want: classify.ClassConnectionReset,
		},
		{
			name:    "closed before the response",
			misdeed: func(c net.Conn) { _ = c.Close() },
			want:    classify.ClassTransport,
		},
		{
			name: "closed in the middle of the body",
			misdeed: func(c net.Conn) {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
				_ = c.Close()
			},
			want: classify.ClassTransport,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(hijack(t, tt.misdeed))
			t.Cleanup(srv.Close)

			_, err := get(context.Background(), newClient(0, nil), srv.URL)
			require.Error(t, err)
			got := classify.Error(context.Background(), err)
			require.Equal(t, tt.want, got.Class, "error: %v", err)
			require.Equal(t, classify.Unknown, got.Outcome, "the request was sent")
			require.Equal(t, classify.Counts, got.Verdict)
			require.True(t, got.Retryable)
		})
	}
}

func TestRealClientTimeout(t *testing.T) {
	t.Parallel()
	h, _ := blocking(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ctx := context.Background()
	_, err := get(ctx, newClient(20*time.Millisecond, nil), srv.URL)
	require.Error(t, err)
	got := classify.Error(ctx, err)
	require.Equal(t, classify.ForClass(classify.ClassTimeout), got, "error: %v", err)
}

func TestRealCallerCancels(t *testing.T) {
	t.Parallel()
	h, arrived := blocking(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := get(ctx, newClient(0, nil), srv.URL)
		errc <- err
	}()
	testwait.Recv(t, arrived, "the request to reach the server")
	cancel()
	err := testwait.Recv(t, errc, "the cancelled request to return")
	require.Error(t, err)

	got := classify.Error(ctx, err)
	require.Equal(t, classify.ForClass(classify.ClassCanceled), got)
	require.False(t, got.CountsAsFailure())
}

func TestRealCallerDeadline(t *testing.T) {
	t.Parallel()
	h, _ := blocking(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := get(ctx, newClient(0, nil), srv.URL)
	require.Error(t, err)

	got := classify.Error(ctx, err)
	require.Equal(t, classify.ForClass(classify.ClassDeadline), got, "the caller's own deadline is neutral")

	// Without the caller's context the same error looks like our timeout,
	// which is why callers should pass it.
	got = classify.Error(context.Background(), err)
	require.Equal(t, classify.ForClass(classify.ClassTimeout), got)
}

func TestRealTLSFailures(t *testing.T) {
	t.Parallel()
	untrusted := quiet(httptest.NewUnstartedServer(http.NotFoundHandler()))
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)

	plain := quiet(httptest.NewServer(http.NotFoundHandler()))
	t.Cleanup(plain.Close)

	modern := quiet(httptest.NewUnstartedServer(http.NotFoundHandler()))
	modern.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
	modern.StartTLS()
	t.Cleanup(modern.Close)

	tests := []struct {
		name   string
		url    string
		client *http.Client
		want   classify.Classification
	}{
		{
			name:   "untrusted certificate",
			url:    untrusted.URL,
			client: newClient(0, nil),
			want:   classify.ForClass(classify.ClassTLSConfig),
		},
		{
			name:   "plain http server behind https url",
			url:    "https://" + plain.Listener.Addr().String(),
			client: newClient(0, nil),
			want:   classify.ForClass(classify.ClassTLSConfig),
		},
		{
			name: "protocol version alert",
			url:  modern.URL,
			client: newClient(0, &tls.Config{
				InsecureSkipVerify: true, //nolint:gosec // the test server's certificate is self-signed
				MaxVersion:         tls.VersionTLS12,
			}),
			want: classify.ForClass(classify.ClassTLS),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := get(context.Background(), tt.client, tt.url)
			require.Error(t, err)
			got := classify.Error(context.Background(), err)
			require.Equal(t, tt.want, got, "error: %v", err)
		})
	}
}

func TestRealRetryAfterResponse(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)

	resp, err := get(context.Background(), newClient(0, nil), srv.URL)
	require.NoError(t, err)
	got := classify.Classify(classify.Input{StatusCode: resp.StatusCode, Header: resp.Header})
	require.Equal(t, with(classify.ClassHTTP429, func(c *classify.Classification) {
		c.StatusCode = http.StatusTooManyRequests
		c.RetryAfter = 7 * time.Second
	}), got)
}
