package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/faultproxy"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

const soakRoleEnv = "AGENTBREAKER_SOAK_ROLE"

// worldProc is the child process that runs every dependency.
type worldProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addrs worldAddrs
}

func startWorld(t *testing.T) *worldProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), soakRoleEnv+"=world")
	cmd.Stderr = os.Stderr
	setPdeathsig(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worldProc{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the world process did not start: %v", err)
	}
	if err := json.Unmarshal([]byte(line), &w.addrs); err != nil {
		t.Fatalf("the world process said %q: %v", line, err)
	}
	return w
}

func (w *worldProc) fault(dep, mode string) error {
	resp, err := http.Post(w.addrs.Control+"/fault?dep="+url.QueryEscape(dep)+"&mode="+mode, "text/plain", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (w *worldProc) stats() (worldStats, error) {
	var st worldStats
	resp, err := http.Get(w.addrs.Control + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// redisProc is a redis-server of the soak's own, on a fixed port, that the fault
// schedule kills (SIGKILL) and starts again empty, as a crashed cache server comes back.
type redisProc struct {
	t    *testing.T
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
}

func startRedis(t *testing.T) *redisProc {
	t.Helper()
	r := &redisProc{t: t, bin: testenv.Command(t, "redis-server", "redis-server"), dir: t.TempDir(), port: freePort(t)}
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *redisProc) start() error {
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"))
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", r.addr(), 200*time.Millisecond); err == nil {
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			n, _ := c.Read(buf)
			_ = c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer", r.addr())
}

func (r *redisProc) kill() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pgBehindProxy returns the test PostgreSQL's DSN rewritten to go through a fault
// proxy: the shared server is never restarted (other tests use it); the schedule cuts
// every connection and refuses new ones instead, which is what a restart looks like
// to a client.
func pgBehindProxy(t *testing.T) (string, *faultproxy.Proxy) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u.Host = p.Addr()
	return u.String(), p
}

// dropTables removes the journal's tables under prefix.
func dropTables(ctx context.Context, prefix string) error {
	c, err := pgxConnect(ctx, testenv.PostgresDSNUnchecked())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, tbl := range testenv.JournalTables {
		if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+prefix+tbl); err != nil {
			return err
		}
	}
	return nil
}
