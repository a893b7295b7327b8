package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// StartTimeout bounds how long a server, a cluster or a set of sentinels may take to
// come up.
const StartTimeout = 30 * time.Second

// Server is one redis-server process.
type Server struct {
	// Addr is host:port on the loopback interface.
	Addr string
	// Port is Addr's port.
	Port int
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited

	mu     sync.Mutex
	killed bool
}

// Start runs one standalone redis-server with extra arguments (for example
// "--requirepass", "secret") and returns once it answers. It is killed when t ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := testenv.Command(t, "redis-server", "redis-server")
	dir := t.TempDir()
	return start(t, bin, dir, false, func(port int) []string { return args })
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it to exit. It
// is idempotent.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.killed {
		s.killed = true
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}

// Alive reports whether the server has not been killed and has not exited.
func (s *Server) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Log returns the server's log (stdout and stderr) so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// freePort returns a port on 127.0.0.1 that is free now, and whose cluster bus port
// (port+10000) is free too when bus is set. Another process may take it before the
// server binds it; start then retries with another.
func freePort(bus bool) (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(25000)
		ok := true
		for _, p := range []int{port, port + 10000} {
			if p != port && !bus {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port found in 100 tries")
}

// start runs bin with the common arguments and args(port), on a free port, and waits
// until it answers. A port taken meanwhile by another process is retried.
func start(t testing.TB, bin, dir string, bus bool, args func(port int) []string) *Server {
	t.Helper()
	var lastErr error
	for range 5 {
		port, err := freePort(bus)
		if err != nil {
			t.Fatal(err)
		}
		s, err := startOn(t, bin, dir, port, args(port))
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "already in use") {
			break
		}
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

func startOn(t testing.TB, bin, dir string, port int, extra []string) (*Server, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "redis-"+strconv.Itoa(port)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// A config file first (sentinels need one), if extra begins with one.
	var args []string
	if len(extra) > 0 && strings.HasSuffix(extra[0], ".conf") {
		args, extra = append(args, extra[0]), extra[1:]
	}
	args = append(args,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "",
		"--dbfilename", "dump-"+strconv.Itoa(port)+".rdb")
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Addr: addr, Port: port, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Kill)
	deadline := time.Now().Add(StartTimeout)
	for {
		if err := ping(addr); err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server on %s exited at start: %s", addr, tail(s.Log()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("redis-server on %s did not answer within %s: %s", addr, StartTimeout, tail(s.Log()))
		}
	}
}

// ping sends a raw PING: any RESP answer (+PONG, or -NOAUTH from a server with a
// password) means the server is up.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line == "" || (line[0] != '+' && line[0] != '-') {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// tail returns the last lines of a log, for an error message.
func tail(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	return strings.Join(lines[max(0, len(lines)-8):], " | ")
}

// command runs a Redis command on addr over a fresh connection and returns the reply
// as text (bulk strings and arrays flattened one element per line), with a deadline.
// It keeps this package free of a Redis client.
func command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		return "", err
	}
	var out strings.Builder
	if err := readReply(bufio.NewReader(c), &out); err != nil {
		return "", err
	}
	return out.String(), nil
}

func readReply(r *bufio.Reader, out *strings.Builder) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		out.WriteString(line[1:] + "\n")
	case '-':
		return errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			out.WriteString("\n")
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf[:n])
		out.WriteString("\n")
	case '*':
		n, _ := strconv.Atoi(line[1:])
		for range n {
			if err := readReply(r, out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// infoField returns one field of INFO section on addr ("" if absent or unreachable).
func infoField(addr, section, field string) string {
	text, err := command(addr, "INFO", section)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond until it holds, failing t with what (and cond's last note) when
// limit passes first.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, note := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: not within %s: %s (%s)", limit, what, note)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runCLI runs redis-cli with a deadline.
func runCLI(t testing.TB, args ...string) string {
	t.Helper()
	bin := testenv.Command(t, "redis-cli", "redis-tools")
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }
