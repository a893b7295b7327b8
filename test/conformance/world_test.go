package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/retry"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// hashKey is the journal's secret in every case, so a restarted agent finds the
// intents of the one that crashed.
var hashKey = []byte("conformance-suite-hash-key-0123456789")

// policyVersion is set on the dependency map and checked in the audit records.
const policyVersion = "conformance-1"

// start is the fake clock's start in every case.
var start = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// recorder keeps what a hook received, in order.
type recorder[T any] struct {
	mu  sync.Mutex
	all []T
}

func (r *recorder[T]) add(v T) {
	r.mu.Lock()
	r.all = append(r.all, v)
	r.mu.Unlock()
}

func (r *recorder[T]) list() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// received is one request a server counted.
type received struct {
	Method, Path, Key, Body string
}

// server is a local dependency that counts every request that reached it, with the
// idempotency key it carried. handle answers the n-th request (from 1).
type server struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []received
	handle func(n int, w http.ResponseWriter, r *http.Request)
}

func newServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{handle: handle}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, received{r.Method, r.URL.Path, r.Header.Get(httptransport.DefaultIdempotencyHeader), string(body)})
		n := len(s.reqs)
		s.mu.Unlock()
		if s.handle == nil {
			_, _ = w.Write([]byte(`{"status": "ok"}`))
			return
		}
		s.handle(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns what reached path ("" for every path), in arrival order.
func (s *server) requests(path string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []received
	for _, r := range s.reqs {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (s *server) count(path string) int { return len(s.requests(path)) }

// clientOpts shapes the HTTP client of a tool.
type clientOpts struct {
	// dial replaces the dialer (to refuse a connection for real).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// timeout and afterFunc set the httptransport's own round-trip timeout, with a
	// timer the test fires by hand.
	timeout   time.Duration
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

// world is one agent process: the dependency map, the agentbreaker plugin with a retry
// orchestrator, a SQLite (or PostgreSQL) journal and an admission queue, and one or
// more runners (workers) with a scripted model, all on one fake clock.
type world struct {
	t           *testing.T
	clk         *clock.Fake
	deps        *dependencymap.Map
	guard       *callbacks.Callbacks
	journal     *journal.Journal
	retrier     *retry.Retrier
	queue       *admission.Controller
	logs        *logBuffer
	events      *recorder[callbacks.Event]
	attempts    *recorder[retry.Event]
	transitions *recorder[breaker.Event]
	queueEvents *recorder[admission.Event]
	queueSleep  *retry.FakeSleeper // spaces the queue's replays; records the waits
	model       *breakertest.Model
	workers     []*breakertest.Harness
	sessions    []string
	tick        chan time.Time

	scriptMu sync.Mutex
	script   func(breakertest.Request) breakertest.Step
}

type setup struct {
	clk          *clock.Fake
	dependencies map[string]dependencymap.Dependency
	policy       breaker.Policy
	mutating     []string
	queueTools   map[string]callbacks.QueueTool
	replay       func(ctx context.Context, it journal.QueueItem) error
	onHandOver   func(it journal.QueueItem)
	lookups      map[string]journal.StatusLookup
	// backend is the journal's backend; nil means SQLite in a fresh directory.
	backend journal.Backend
	prefix  string
	confirm bool
	// runQueue runs the admission controller's Run loop, wired to the breakers'
	// transitions, as the admission docs ask.
	runQueue bool
	// tools builds the agent's tools; it gets the world to wrap them with the plugin's
	// idempotency keys.
	tools   func(w *world) []tool.Tool
	workers int
	// loopGuard configures the plugin's loop guard (callbacks.Config.Guidance.LoopGuard).
	loopGuard loopguard.Config
}

func newWorld(t *testing.T, s setup) *world {
	t.Helper()
	w := &world{
		t: t, clk: s.clk, logs: &logBuffer{},
		events: &recorder[callbacks.Event]{}, attempts: &recorder[retry.Event]{},
		transitions: &recorder[breaker.Event]{}, queueEvents: &recorder[admission.Event]{},
		tick: make(chan time.Time), queueSleep: &retry.FakeSleeper{},
	}
	if w.clk == nil {
		w.clk = clock.NewFake(start)
	}
	logger := newLogger(w.logs)
	var ctrl atomic.Pointer[admission.Controller]
	w.deps = dependencymap.MustNew(dependencymap.Config{
		PolicyVersion: policyVersion,
		Default:       s.policy,
		Dependencies:  s.dependencies,
		Clock:         w.clk,
		OnStateChange: []func(breaker.Event){w.transitions.add, func(e breaker.Event) {
			if c := ctrl.Load(); c != nil {
				c.OnStateChange(e)
			}
		}},
	})

	backend := s.backend
	if backend == nil {
		backend = sqlite.Backend{Path: filepath.Join(t.TempDir(), "journal.db")}
	}
	j, err := journal.Open(context.Background(), journal.Config{
		Backend: backend, Prefix: s.prefix, HashKey: hashKey, Lookups: s.lookups, Clock: w.clk, Logger: logger,
	})
	require.NoError(t, err)
	w.journal = j
	t.Cleanup(func() { _ = j.Close() })

	replay := s.replay
	if replay == nil {
		replay = func(context.Context, journal.QueueItem) error {
			t.Errorf("no replay expected in this case")
			return errors.New("unexpected replay")
		}
	}
	w.queue = admission.MustNew(admission.Config{
		Map: w.deps, Journal: j, Replay: replay, OnHandOver: s.onHandOver, Clock: w.clk,
		Sleeper: w.queueSleep, Logger: logger, OnEvent: []func(admission.Event){w.queueEvents.add},
		NewTicker: func(time.Duration) (<-chan time.Time, func()) { return w.tick, func() {} },
	})
	ctrl.Store(w.queue)
	if s.runQueue {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = w.queue.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })
	}

	w.retrier = retry.MustNew(retry.Config{
		Journal: j.ForRetry(), JournalAll: true, Clock: w.clk, Sleeper: &retry.FakeSleeper{}, Logger: logger,
		OnAttempt: []func(context.Context, retry.Event){func(_ context.Context, e retry.Event) { w.attempts.add(e) }},
	})
	w.guard = callbacks.MustNew(callbacks.Config{
		Dependencies: w.deps,
		Guidance: callbacks.Guidance{
			LoopGuard: s.loopGuard,
		},
		Clock: w.clk,
		SideEffects: callbacks.SideEffects{
			MutatingTools:         s.mutating,
			Retry:                 w.retrier,
			Journal:               j,
			ConfirmUnknownReplays: s.confirm,
			Admission:             w.queue,
			QueueTools:            s.queueTools,
		},
		Observability: callbacks.Observability{
			Logger:  logger,
			OnEvent: w.events.add,
		},
	})

	var tools []tool.Tool
	if s.tools != nil {
		tools = s.tools(w)
	}
	w.model = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		w.scriptMu.Lock()
		script := w.script
		w.scriptMu.Unlock()
		if script == nil {
			return breakertest.Fail(errors.New("no script for this turn"))
		}
		return script(r)
	}})
	for i := range max(s.workers, 1) {
		a, err := llmagent.New(llmagent.Config{Name: "agent", Model: w.model, Tools: tools})
		require.NoError(t, err)
		// agentbreaker first, as the README's quick start registers it.
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{w.guard.Plugin()}})
		sid, err := h.NewSession(context.Background())
		require.NoError(t, err, "worker %d", i)
		w.workers = append(w.workers, h)
		w.sessions = append(w.sessions, sid)
	}
	return w
}

func newLogger(out io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// setScript sets what the model answers from now on.
func (w *world) setScript(script func(breakertest.Request) breakertest.Step) {
	w.scriptMu.Lock()
	w.script = script
	w.scriptMu.Unlock()
}

// turn runs one user turn on worker 0 with the given model script.
func (w *world) turn(t *testing.T, script func(breakertest.Request) breakertest.Step) *breakertest.Turn {
	t.Helper()
	w.setScript(script)
	turn, err := w.workers[0].Run(context.Background(), w.sessions[0], "go")
	require.NoError(t, err)
	require.Empty(t, turn.Errs)
	return turn
}

// breaker returns the breaker of a dependency key.
func (w *world) breaker(t *testing.T, key string) *breaker.Breaker {
	t.Helper()
	b, ok := w.deps.Get(key)
	require.True(t, ok, "no breaker %q", key)
	return b
}

// intents returns the journal's intents of tool, oldest first; intents written at
// the same (fake) instant are ordered by request and attempt.
func (w *world) intents(t *testing.T, tool string) []journal.Intent {
	t.Helper()
	in, err := w.journal.Intents(context.Background(), journal.Filter{Tool: tool})
	require.NoError(t, err)
	slices.SortStableFunc(in, func(a, b journal.Intent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.RequestID, b.RequestID); c != 0 {
			return c
		}
		return a.Attempt - b.Attempt
	})
	return in
}

// queued returns every queue item of every dependency in every state.
func (w *world) queued(t *testing.T) []journal.QueueItem {
	t.Helper()
	items, err := w.journal.Queued(context.Background(), "", 0)
	require.NoError(t, err)
	return items
}

// requireQueueEmpty asserts that nothing waits in, or ever entered, the queue.
func (w *world) requireQueueEmpty(t *testing.T) {
	t.Helper()
	require.Empty(t, w.queued(t), "queue items")
	require.Empty(t, w.queueEvents.list(), "queue events")
}

// requireClean asserts that the plugin holds nothing after the turns: no call in
// flight, no invocation state, no probe lease out.
func (w *world) requireClean(t *testing.T) {
	t.Helper()
	s := w.guard.Stats()
	require.Zero(t, s.InFlight, "calls in flight")
	require.Zero(t, s.Invocations, "invocation states left")
	require.Zero(t, s.Panics, "panics in callbacks")
	for _, b := range w.deps.Breakers() {
		require.Zero(t, b.Snapshot().ProbesInFlight, "probe leases of %s", b.Name())
	}
	w.requireAuditKeys(t)
}

// httpTool is a tool that sends its arguments as JSON to url the way a careful tool
// author writes it (README, "What counts as a failure"): through an httptransport
// client, whose errors it returns as they are; a status of 400 or more as a typed
// classify.StatusError with the server's Retry-After and no body text; a 2xx body as
// the result map. It is wrapped so that it runs with the operation's idempotency key.
func (w *world) httpTool(t *testing.T, name, method, url string, o clientOpts) tool.Tool {
	t.Helper()
	base := &http.Transport{DisableKeepAlives: true, DialContext: o.dial}
	t.Cleanup(base.CloseIdleConnections)
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{
		Base: base, Timeout: o.timeout, AfterFunc: o.afterFunc, Clock: w.clk,
	})}
	ft, err := functiontool.New(functiontool.Config{Name: name, Description: "Calls " + name + "."},
		func(ctx agent.Context, args map[string]any) (map[string]any, error) {
			body, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return nil, err
			}
			if resp.StatusCode >= 400 {
				ra, _ := classify.ParseRetryAfter(resp.Header.Get("Retry-After"), w.clk.Now())
				return nil, classify.StatusError(resp.StatusCode, ra, "")
			}
			var out map[string]any
			if err := json.Unmarshal(b, &out); err != nil || out == nil {
				out = map[string]any{"status": "ok", "body": string(b)}
			}
			return out, nil
		})
	require.NoError(t, err)
	return w.guard.MustWithIdempotencyKey(ft)
}

// callOnce is a model that calls tool with args once, then answers "done".
func callOnce(tool string, args map[string]any) func(breakertest.Request) breakertest.Step {
	return func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call(tool, args)
	}
}

// steps is a model that answers the turn's n-th request with steps[n] (each may act
// first, e.g. move the clock), then "done".
func steps(s ...func() breakertest.Step) func(breakertest.Request) breakertest.Step {
	var mu sync.Mutex
	n := 0
	return func(breakertest.Request) breakertest.Step {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i < len(s) {
			return s[i]()
		}
		return breakertest.Text("done")
	}
}

func call(tool string, args map[string]any) func() breakertest.Step {
	return func() breakertest.Step { return breakertest.Call(tool, args) }
}
