package breakertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Behavior is how a [Server] answers one request.
type Behavior struct {
	// Status is the response status. Defaults to 200.
	Status int
	// Body is the response body.
	Body string
	// Header holds extra response headers.
	Header http.Header
	// RetryAfter, when non-empty, is sent as the Retry-After header.
	RetryAfter string
	// Hang holds the request until Server.Release is called or the client gives up,
	// then answers as above.
	Hang bool
	// Drop closes the connection without answering, as a crashing server would.
	Drop bool
}

// OK answers 200 with body.
func OK(body string) Behavior { return Behavior{Status: http.StatusOK, Body: body} }

// Status answers with the status code and an empty body.
func Status(code int) Behavior { return Behavior{Status: code} }

// RetryAfter answers with the status code and a Retry-After of seconds.
func RetryAfter(code, seconds int) Behavior {
	return Behavior{Status: code, RetryAfter: strconv.Itoa(seconds)}
}

// Hang holds requests until released.
func Hang() Behavior { return Behavior{Hang: true} }

// Drop closes connections without answering.
func Drop() Behavior { return Behavior{Drop: true} }

// Server is a local HTTP dependency (httptest, on 127.0.0.1) that fails on command and
// counts every request that reached it. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL.
	URL string

	srv      *httptest.Server
	requests atomic.Int64

	mu       sync.Mutex
	behavior Behavior
	queue    []Behavior
	release  chan struct{} // closed by Release; replaced for the next hang
	hanging  int
	changed  chan struct{} // closed and replaced whenever hanging changes
}

// NewServer starts a server that answers 200 "ok" until told otherwise. It is closed
// when the test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := StartServer()
	tb.Cleanup(s.Close)
	return s
}

// StartServer is NewServer outside a test: the caller must Close the server.
func StartServer() *Server {
	s := &Server{
		behavior: OK("ok"),
		release:  make(chan struct{}),
		changed:  make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Set makes b the answer to every request that the queue does not cover.
func (s *Server) Set(b Behavior) {
	s.mu.Lock()
	s.behavior = b
	s.mu.Unlock()
}

// Enqueue adds one-shot answers, used in order before the Set behaviour.
func (s *Server) Enqueue(bs ...Behavior) {
	s.mu.Lock()
	s.queue = append(s.queue, bs...)
	s.mu.Unlock()
}

// Requests returns how many requests reached the server.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Hanging returns how many requests are being held by a Hang behaviour.
func (s *Server) Hanging() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hanging
}

// WaitHanging blocks until at least n requests are hanging, or ctx ends.
func (s *Server) WaitHanging(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		h, ch := s.hanging, s.changed
		s.mu.Unlock()
		if h >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release lets every request hanging now answer.
func (s *Server) Release() {
	s.mu.Lock()
	close(s.release)
	s.release = make(chan struct{})
	s.mu.Unlock()
}

// Close releases hanging requests and shuts the server down.
func (s *Server) Close() {
	s.Release()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) next() (Behavior, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.behavior
	if len(s.queue) > 0 {
		b = s.queue[0]
		s.queue = s.queue[1:]
	}
	return b, s.release
}

func (s *Server) setHanging(delta int) {
	s.mu.Lock()
	s.hanging += delta
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	b, release := s.next()
	if b.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // net/http closes the connection without a response
	}
	if b.Hang {
		s.setHanging(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		s.setHanging(-1)
	}
	for k, vs := range b.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if b.RetryAfter != "" {
		w.Header().Set("Retry-After", b.RetryAfter)
	}
	status := b.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.Body))
}
