package httptransport_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/stretchr/testify/require"
)

// manualTimer is a Config.AfterFunc that fires only when the test says so.
type manualTimer struct {
	mu      sync.Mutex
	pending []*timerEntry
	started chan time.Duration
}

type timerEntry struct {
	f       func()
	stopped bool
	fired   bool
}

func newManualTimer() *manualTimer { return &manualTimer{started: make(chan time.Duration, 100)} }

func (m *manualTimer) afterFunc(d time.Duration, f func()) func() bool {
	e := &timerEntry{f: f}
	m.mu.Lock()
	m.pending = append(m.pending, e)
	m.mu.Unlock()
	m.started <- d
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		was := !e.stopped && !e.fired
		e.stopped = true
		return was
	}
}

// fire runs every timer that has not been stopped.
func (m *manualTimer) fire() {
	m.mu.Lock()
	var fs []func()
	for _, e := range m.pending {
		if !e.stopped && !e.fired {
			e.fired = true
			fs = append(fs, e.f)
		}
	}
	m.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (m *manualTimer) live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.pending {
		if !e.stopped && !e.fired {
			n++
		}
	}
	return n
}

// semaphore is a minimal bulkhead.
type semaphore struct {
	slots chan struct{}
}

func newSemaphore(n int) *semaphore { return &semaphore{slots: make(chan struct{}, n)} }

var errFull = errors.New("no free slot")

func (s *semaphore) TryAcquire() (func(), error) {
	select {
	case s.slots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-s.slots }) }, nil
	default:
		return nil, errFull
	}
}

func (s *semaphore) inUse() int { return len(s.slots) }

// fixture is a dependency "api" reached at one local server, behind a breaker.
type fixture struct {
	t     *testing.T
	clk   *clock.Fake
	m     *dependencymap.Map
	b     *breaker.Breaker
	base  *http.Transport
	tr    *httptransport.Transport
	cli   *http.Client
	timer *manualTimer

	mu  sync.Mutex
	res []httptransport.Result
}

func newFixture(t *testing.T, host string, p breaker.Policy, mod func(*httptransport.Config)) *fixture {
	t.Helper()
	if p.Jitter == 0 {
		p.Jitter = -1
	}
	fc := clock.NewFake(time.Time{})
	m, err := dependencymap.New(dependencymap.Config{
		Clock:        fc,
		Dependencies: map[string]dependencymap.Dependency{"api": {Hosts: []string{host}, Policy: p}},
	})
	require.NoError(t, err)
	b, ok := m.Get("api")
	require.True(t, ok)
	base := &http.Transport{DisableKeepAlives: false}
	f := &fixture{t: t, clk: fc, m: m, b: b, base: base, timer: newManualTimer()}
	cfg := httptransport.Config{Base: base, Map: m, Clock: fc, AfterFunc: f.timer.afterFunc,
		OnResult: []func(httptransport.Result){func(r httptransport.Result) {
			f.mu.Lock()
			f.res = append(f.res, r)
			f.mu.Unlock()
		}}}
	if mod != nil {
		mod(&cfg)
	}
	f.tr = httptransport.MustNew(cfg)
	f.cli = &http.Client{Transport: f.tr}
	t.Cleanup(base.CloseIdleConnections)
	return f
}

// result returns the oldest round trip not yet looked at.
func (f *fixture) result() httptransport.Result {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.res) == 0 {
		f.t.Fatal("no result was reported")
	}
	r := f.res[0]
	f.res = f.res[1:]
	return r
}

func hostOf(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Host
}

// refusedAddr returns an address where nothing listens.
func refusedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// resetServer accepts raw TCP connections and resets them with an RST: after the
// client's request has arrived but before reading any of it, or after reading one whole
// request, as told.
type resetServer struct {
	l         net.Listener
	afterRead bool
	accepted  atomic.Int32
	requests  chan *receivedRequest
	wg        sync.WaitGroup
}

type receivedRequest struct {
	method, key string
	body        []byte
}

func newResetServer(t *testing.T, afterRead bool) *resetServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &resetServer{l: l, afterRead: afterRead, requests: make(chan *receivedRequest, 100)}
	s.wg.Go(s.serve)
	t.Cleanup(func() {
		l.Close()
		s.wg.Wait()
	})
	return s
}

func (s *resetServer) addr() string { return s.l.Addr().String() }

func (s *resetServer) serve() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		tc := c.(*net.TCPConn)
		// A bound on every wait below: a client that never sends must not hang the test.
		_ = tc.SetReadDeadline(time.Now().Add(serverWaitBound))
		if s.afterRead {
			req, err := http.ReadRequest(bufio.NewReader(tc))
			if err == nil {
				b, _ := io.ReadAll(req.Body)
				s.requests <- &receivedRequest{method: req.Method, key: req.Header.Get("Idempotency-Key"), body: b}
			}
		} else {
			waitReadable(tc)
		}
		_ = tc.SetLinger(0) // close with RST
		_ = tc.Close()
	}
}

// serverWaitBound bounds how long a test server waits for a client's bytes. Well-behaved
// tests never reach it; it turns a lost wake-up into a failure instead of a hang.
const serverWaitBound = 10 * time.Second

func (s *resetServer) received() []*receivedRequest {
	var out []*receivedRequest
	for {
		select {
		case r := <-s.requests:
			out = append(out, r)
		default:
			return out
		}
	}
}

// hangServer answers nothing until the client goes away; it reports each arrival.
func hangServer(t *testing.T) (*httptest.Server, chan struct{}) {
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}

// slots has the TryAcquire/Release shape of agentbreaker's bulkhead package.
type slots struct {
	mu    sync.Mutex
	free  int
	taken int
}

type fullErr struct{}

func (fullErr) Error() string           { return "bulkhead full" }
func (fullErr) RejectedLocally() string { return "bulkhead_full" }

func (s *slots) TryAcquire() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == 0 {
		return fullErr{}
	}
	s.free--
	s.taken++
	return nil
}

func (s *slots) Release() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	return true
}
