package fleet_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/redistest"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// fakeServer accepts connections on loopback and hands each to serve, until the test
// ends.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Issue 26, defects 2 and 3: a Redis that never answered is no outage, and the error
// that keeps the breakers local is named by its class, in the log, in Status, in
// ScopeError and in SyncErrors, so an operator looks at the credentials, the address
// or the network as the class says.
func TestNeverAnsweredIsNoOutageAndErrorsAreClassified(t *testing.T) {
	t.Parallel()
	garbage := func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			if _, err := c.Write([]byte("garbage, not RESP\r\n")); err != nil {
				return
			}
		}
	}
	// respError answers every command with one RESP error reply: a server that speaks
	// Redis's protocol but cannot serve (a cluster slot without a master, a replica
	// loading its data) or does not run scripts (a proxy).
	respError := func(reply string) func(net.Conn) {
		return func(c net.Conn) {
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if !strings.HasPrefix(line, "*") {
					continue // only the first line of each command gets an answer
				}
				if _, err := c.Write([]byte("-" + reply + "\r\n")); err != nil {
					return
				}
			}
		}
	}
	silent := func(c net.Conn) { _, _ = bufio.NewReader(c).ReadString(0) } // reads, never answers
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") }))
	t.Cleanup(httpSrv.Close)

	type target struct{ addr, user, password string }
	// A requirepass for the default user, and two ACL users: alice may run everything,
	// carol only PING (so EVALSHA is refused with NOPERM).
	withPass := redistest.Start(t, "--requirepass", "right-password",
		"--user", "alice", "on", ">alice-pw", "~*", "&*", "+@all",
		"--user", "carol", "on", ">carol-pw", "~*", "&*", "-@all", "+ping", "+hello", "+auth")
	secured := func(*testing.T) string { return withPass.Addr }
	tests := []struct {
		name   string
		target func(t *testing.T) target
		want   string
	}{
		{"closed port", func(t *testing.T) target { return target{addr: closedPort(t)} }, fleet.ClassUnreachable},
		{"wrong host", func(t *testing.T) target {
			_, port, _ := net.SplitHostPort(closedPort(t))
			return target{addr: "127.0.0.2:" + port}
		}, fleet.ClassUnreachable},
		{"black hole", func(t *testing.T) target { return target{addr: fakeServer(t, silent)} }, fleet.ClassTimeout},
		{"garbage server", func(t *testing.T) target { return target{addr: fakeServer(t, garbage)} }, fleet.ClassProtocol},
		{"cluster down", func(t *testing.T) target {
			return target{addr: fakeServer(t, respError("CLUSTERDOWN The cluster is down"))}
		}, fleet.ClassUnreachable},
		{"loading", func(t *testing.T) target {
			return target{addr: fakeServer(t, respError("LOADING Redis is loading the dataset in memory"))}
		}, fleet.ClassUnreachable},
		{"no scripting", func(t *testing.T) target {
			return target{addr: fakeServer(t, respError("ERR unknown command 'evalsha'"))}
		}, fleet.ClassProtocol},
		{"http server", func(t *testing.T) target { return target{addr: strings.TrimPrefix(httpSrv.URL, "http://")} }, fleet.ClassProtocol},
		{"wrong password", func(t *testing.T) target { return target{addr: secured(t), password: "wrong"} }, fleet.ClassAuth},
		{"no password", func(t *testing.T) target { return target{addr: secured(t)} }, fleet.ClassAuth},
		{"wrong ACL user", func(t *testing.T) target { return target{addr: secured(t), user: "bob", password: "alice-pw"} }, fleet.ClassAuth},
		{"ACL user without EVALSHA", func(t *testing.T) target { return target{addr: secured(t), user: "carol", password: "carol-pw"} }, fleet.ClassAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.target(t)
			var logs syncbuf.Buffer
			f, err := fleet.New(fleet.Config{Addr: tg.addr, Username: tg.user, Password: tg.password,
				App: "errors", Prefix: "abtest", SyncInterval: 100 * time.Millisecond, OpTimeout: 100 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			defer f.Close()
			b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute)})
			require.NoError(t, f.Attach(b))
			waitSyncs(t, 3, f)
			// (On a loaded machine a round may also time out now and then: wait for the
			// class to show, and let timeouts pass as noise below.)
			testenv.WaitFor(t, 5*time.Second, "Status.Error "+tt.want, func() bool {
				st, _ := f.Status("crm")
				return st.Error == tt.want
			})
			st, _ := f.Status("crm")
			require.False(t, st.FleetWide)
			require.Equal(t, tt.want, f.ScopeError("crm"))
			require.Equal(t, "local", f.Scope("crm"))

			s := f.Stats()
			require.Zero(t, s.Outages, "a Redis that never answered is no outage")
			require.Zero(t, s.Syncs)
			require.Positive(t, s.Failures)
			var sum int64
			for class, n := range f.SyncErrors() {
				sum += n
				if class == tt.want {
					require.Positive(t, n, "class %s", class)
				} else if class != fleet.ClassTimeout {
					require.Zero(t, n, "class %s", class)
				}
			}
			require.Equal(t, s.Failures, sum, "SyncErrors sums to Failures")

			text := logs.String()
			require.Equal(t, 1, strings.Count(text, "Redis has not answered yet"), text)
			require.Contains(t, text, "error="+tt.want)
			require.NotContains(t, text, "Redis unreachable", "not logged as an outage")
			require.NotContains(t, text, "wrong", "the log carries the class, not the error's text")
		})
	}
}

// An outage is counted and logged once when a Redis that answered stops answering,
// with its class; then the breakers' Status says why they are local.
func TestOutageAfterAnsweringIsCountedWithItsClass(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var logs syncbuf.Buffer
	f, err := fleet.New(fleet.Config{Addr: srv.Addr, App: "outage", Prefix: "abtest",
		SyncInterval: 50 * time.Millisecond, OpTimeout: 40 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer f.Close()
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute)})
	require.NoError(t, f.Attach(b))
	testenv.WaitFor(t, 5*time.Second, "fleet-wide", func() bool { return f.Scope("crm") == "fleet" })
	require.Equal(t, "", f.ScopeError("crm"))
	srv.Kill()
	testenv.WaitFor(t, 5*time.Second, "local", func() bool { return f.Scope("crm") == "local" })
	waitSyncs(t, 3, f)
	require.Equal(t, int64(1), f.Stats().Outages)
	require.Equal(t, fleet.ClassUnreachable, f.ScopeError("crm"))
	require.Equal(t, 1, strings.Count(logs.String(), "Redis unreachable"), logs.String())
	require.Contains(t, logs.String(), "error=unreachable")
	require.NotContains(t, logs.String(), "has not answered")
}
