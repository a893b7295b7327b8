package fleet_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
)

// The multi-process tests re-execute this test binary as replicas (see TestMain). A
// replica attaches one breaker to a fleet, prints READY once it is fleet-wide, waits
// for GO on stdin, then calls the server every CallEvery until stdin closes. It
// prints every state change of its breaker as "E <unix nanos> <from> <to> <reason>".
const childEnv = "AGENTBREAKER_FLEET_CHILD"

type childSpec struct {
	Addr, App, Replica, URL string
	Interval, Cooldown      time.Duration
	ProbeLease, CallEvery   time.Duration
	MinCalls                int
}

func replicaChild() {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad spec:", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	out := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		outMu.Unlock()
	}
	f := fleet.MustNew(fleet.Config{Addr: spec.Addr, App: spec.App, Prefix: "abtest", Replica: spec.Replica,
		SyncInterval: spec.Interval, OpTimeout: min(spec.Interval, 100*time.Millisecond),
		// A round trip made slow by a loaded test machine must not count as an outage
		// (after which each replica would probe alone, as designed).
		LocalAfter: 2 * time.Second})
	b := breaker.MustNew(breaker.Config{Name: "search", Policy: breaker.Policy{
		MinimumCalls: spec.MinCalls, FailureRateThreshold: 0.5, Window: 30 * time.Second,
		Cooldown: spec.Cooldown, Jitter: -1, ProbeLease: spec.ProbeLease, Version: "v1",
	}, OnStateChange: []func(breaker.Event){func(e breaker.Event) {
		out("E %d %s %s %s", time.Now().UnixNano(), e.From, e.To, e.Reason)
	}}})
	if err := f.Attach(b); err != nil {
		fmt.Fprintln(os.Stderr, "attach:", err)
		os.Exit(2)
	}
	for {
		if s, _ := f.Status("search"); s.FleetWide {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out("READY")
	stdin := bufio.NewScanner(os.Stdin)
	if !stdin.Scan() || stdin.Text() != "GO" {
		os.Exit(0)
	}
	stop := make(chan struct{})
	go func() {
		for stdin.Scan() {
		}
		close(stop)
	}()
	client := &http.Client{Timeout: time.Minute}
	tick := time.NewTicker(spec.CallEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			f.Close()
			out("DONE")
			os.Exit(0)
		case <-tick.C:
		}
		p, err := b.Allow()
		if err != nil {
			continue
		}
		req, _ := http.NewRequest("GET", spec.URL, nil)
		req.Header.Set("X-Replica", spec.Replica)
		req.Header.Set("X-Probe", strconv.FormatBool(p.IsProbe()))
		resp, err := client.Do(req)
		if err != nil {
			p.Failure()
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 500 {
			p.Success()
		} else {
			p.Failure()
		}
	}
}

// replica is a running child process.
type replica struct {
	name  string
	cmd   *exec.Cmd
	stdin interface {
		Write([]byte) (int, error)
		Close() error
	}
	mu     sync.Mutex
	events []childEvent
	ready  chan struct{}
	exited chan struct{}
}

type childEvent struct {
	At       time.Time
	From, To string
	Reason   string
}

func startReplica(t *testing.T, spec childSpec) *replica {
	t.Helper()
	js, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	r := &replica{name: spec.Replica, cmd: cmd, stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(r.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "READY":
				close(r.ready)
			case strings.HasPrefix(line, "E "):
				parts := strings.SplitN(line, " ", 5)
				ns, _ := strconv.ParseInt(parts[1], 10, 64)
				r.mu.Lock()
				r.events = append(r.events, childEvent{At: time.Unix(0, ns), From: parts[2], To: parts[3], Reason: parts[4]})
				r.mu.Unlock()
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
	})
	return r
}

func (r *replica) snapshot() []childEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]childEvent(nil), r.events...)
}

func (r *replica) state() string {
	ev := r.snapshot()
	if len(ev) == 0 {
		return "closed"
	}
	return ev[len(ev)-1].To
}

// request is one call the test server received.
type request struct {
	At      time.Time
	Replica string
	Probe   bool
}

// dependency is the test server: it answers 200 or 500, records every request, and
// can hold probes until the caller goes away.
type dependency struct {
	mu        sync.Mutex
	failing   bool
	hangProbe bool
	requests  []request
}

func (d *dependency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	rq := request{At: time.Now(), Replica: r.Header.Get("X-Replica"), Probe: r.Header.Get("X-Probe") == "true"}
	d.requests = append(d.requests, rq)
	failing, hang := d.failing, d.hangProbe && rq.Probe
	d.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	if failing {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (d *dependency) set(failing, hangProbe bool) {
	d.mu.Lock()
	d.failing, d.hangProbe = failing, hangProbe
	d.mu.Unlock()
}

func (d *dependency) snapshot() []request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]request(nil), d.requests...)
}
