package callbacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// replayServer is a real local payments service that honours idempotency keys: the
// first POST /charge with a key applies the charge and drops the connection before
// answering; a later request with a key already applied answers 200 with the stored
// result and applies nothing. Every request's key is recorded.
type replayServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	applied map[string]int // charges applied per key
}

func newReplayServer(t *testing.T) *replayServer {
	t.Helper()
	s := &replayServer{applied: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charge", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get(httptransport.DefaultIdempotencyHeader)
		s.mu.Lock()
		s.keys = append(s.keys, key)
		seen := s.applied[key] > 0
		if !seen {
			s.applied[key]++
		}
		s.mu.Unlock()
		if seen {
			_, _ = w.Write([]byte(`{"charged": true, "replayed": true}`))
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *replayServer) requests() (keys []string, charges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.applied {
		charges += n
	}
	return append([]string(nil), s.keys...), charges
}

// confirmationRequest returns the adk_request_confirmation call of a turn and the
// confirmation it carries.
func confirmationRequest(t *testing.T, turn *breakertest.Turn) (*genai.FunctionCall, toolconfirmation.ToolConfirmation, *genai.FunctionCall) {
	t.Helper()
	var reqs []*genai.FunctionCall
	for _, fc := range turn.FunctionCalls() {
		if fc.Name == toolconfirmation.FunctionCallName {
			reqs = append(reqs, fc)
		}
	}
	require.Len(t, reqs, 1, "one confirmation request")
	raw, err := json.Marshal(reqs[0].Args)
	require.NoError(t, err)
	var args struct {
		Original     genai.FunctionCall                `json:"originalFunctionCall"`
		Confirmation toolconfirmation.ToolConfirmation `json:"toolConfirmation"`
	}
	require.NoError(t, json.Unmarshal(raw, &args))
	return reqs[0], args.Confirmation, &args.Original
}

// answer sends the user's answer to a confirmation request the way adk-go expects it:
// a function response named adk_request_confirmation, with the request's call ID and
// a ToolConfirmation as its response.
func answer(t *testing.T, f *callbackstest.Fixture, req *genai.FunctionCall, confirmed bool) *breakertest.Turn {
	t.Helper()
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": confirmed},
	}}}}
	turn := &breakertest.Turn{}
	for ev, err := range f.Harness.Runner.Run(context.Background(), "user", f.Session, msg, agent.RunConfig{}) {
		require.NoError(t, err)
		if ev != nil {
			turn.Events = append(turn.Events, ev)
		}
	}
	return turn
}

// TestConfirmUnknownReplay follows a charge whose outcome is UNKNOWN through the real
// runner with Config.SideEffects.ConfirmUnknownReplays: the model's repeat is not sent but put to
// the user through adk-go's tool confirmation. Confirmed, the journal's intent is
// approved and the charge is sent once more with the same idempotency key (the server
// recognises it and applies nothing twice). Declined, nothing is sent and the intent
// still waits for an operator.
func TestConfirmUnknownReplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		confirmed    bool
		wantRequests int
		wantState    journal.State   // of the first attempt's intent
		wantType     any             // of the resumed call's response
		wantRefused  int             // EventRetryRefused over both turns
		wantPending  int             // intents awaiting an operator at the end
		wantStates   []journal.State // of every intent of the call, oldest first
	}{
		{name: "confirmed", confirmed: true, wantRequests: 2, wantState: journal.StateApproved, wantType: nil,
			wantRefused: 1, wantPending: 0, wantStates: []journal.State{journal.StateApproved, journal.StateSucceeded}},
		{name: "declined", confirmed: false, wantRequests: 1, wantState: journal.StateAwaitingOperator,
			wantType: payloads.TypeOutcomeUnknown, wantRefused: 2, wantPending: 1,
			wantStates: []journal.State{journal.StateAwaitingOperator}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newReplayServer(t)
			path := filepath.Join(t.TempDir(), "journal.db")
			var j *journal.Journal
			var r *retry.Retrier
			args := map[string]any{"amount": 42, "to": "acct-7"}
			f := callbackstest.New(t, callbackstest.Config{
				Steps: []breakertest.Step{
					breakertest.Call("charge", args),
					breakertest.Call("charge", args), // the model repeats it
					breakertest.Text("done"),         // after the user's answer
				},
				Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
				Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge"}, ConfirmUnknownReplays: true}},
				Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
					var err error
					j, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: path}, Clock: f.Clock})
					require.NoError(t, err)
					t.Cleanup(func() { _ = j.Close() })
					r = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: f.Clock})
					cfg.SideEffects.Retry, cfg.SideEffects.Journal = r, j
				},
				ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
					return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "charge", http.MethodPost, srv.URL+"/charge"))}
				},
			})

			turn := f.Run(t, "pay acct-7 42")
			keys, charges := srv.requests()
			require.Len(t, keys, 1, "the repeat was not sent")
			require.Equal(t, 1, charges)
			require.Equal(t, []any{payloads.TypeOutcomeUnknown, payloads.TypeOutcomeUnknown}, responseTypes(turn))
			frs := turn.FunctionResponses()
			require.Contains(t, frs[1].Response[payloads.KeyInstruction], "asked whether to send it again")
			req, conf, orig := confirmationRequest(t, turn)
			require.Equal(t, "charge", orig.Name)
			require.Equal(t, turn.FunctionCalls()[1].ID, orig.ID, "the confirmation is for the repeat")
			require.Contains(t, conf.Hint, "may already have been carried out")
			require.False(t, conf.Confirmed)
			require.Equal(t, 2, f.Model.Calls(), "the turn paused for the user's answer")

			intents, err := j.Intents(t.Context(), journal.Filter{Tool: "charge"})
			require.NoError(t, err)
			require.Len(t, intents, 1)
			first := intents[0]
			require.Equal(t, journal.StateAwaitingOperator, first.State)
			require.Equal(t, keys[0], first.IdempotencyKey)

			resumed := answer(t, f, req, tt.confirmed)
			keys, charges = srv.requests()
			require.Len(t, keys, tt.wantRequests, "requests that reached the server")
			for _, k := range keys {
				require.Equal(t, first.IdempotencyKey, k, "a replay carries the first attempt's key")
			}
			require.Equal(t, 1, charges, "the charge was applied once")
			rfrs := resumed.FunctionResponses()
			require.Len(t, rfrs, 1, "the resumed call's response")
			require.Equal(t, orig.ID, rfrs[0].ID)
			require.Equal(t, tt.wantType, rfrs[0].Response[payloads.KeyResponseType])
			if tt.confirmed {
				require.Equal(t, "ok", rfrs[0].Response["status"])
				require.Contains(t, rfrs[0].Response["body"], `"replayed": true`)
			} else {
				require.Contains(t, rfrs[0].Response[payloads.KeyReason], "chose not to send it again")
				require.Contains(t, rfrs[0].Response[payloads.KeyInstruction], "Do not repeat this action")
			}
			require.Equal(t, "done", resumed.FinalText())
			require.Equal(t, 3, f.Model.Calls())

			got, err := j.Get(t.Context(), first.ID)
			require.NoError(t, err)
			require.Equal(t, tt.wantState, got.State)
			intents, err = j.Intents(t.Context(), journal.Filter{Tool: "charge"})
			require.NoError(t, err)
			var states []journal.State
			for _, in := range intents {
				states = append(states, in.State)
				require.Equal(t, first.RequestID, in.RequestID, "one logical operation")
			}
			require.ElementsMatch(t, tt.wantStates, states)
			pending, err := j.Pending(t.Context())
			require.NoError(t, err)
			require.Len(t, pending, tt.wantPending)
			refused := f.Events.Of(callbacks.EventRetryRefused)
			require.Len(t, refused, tt.wantRefused)
			for _, e := range refused {
				require.Equal(t, retry.ReasonUnknownOutcome, e.RetryReason)
			}
			require.Zero(t, r.Tracking())
			f.RequireClean(t)
		})
	}
}

func TestConfirmUnknownReplaysNeedsJournal(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	r := retry.MustNew(retry.Config{})
	_, err := callbacks.New(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{Retry: r, ConfirmUnknownReplays: true}})
	require.ErrorContains(t, err, "Config.SideEffects.ConfirmUnknownReplays = true: needs Config.SideEffects.Journal, which is nil")
}

// The crash child of TestCrashBetweenIntentAndOutcome: an agent that charges through
// the real runner and is killed while the payments server holds the request.
const crashChildEnv = "AGENTBREAKER_CALLBACKS_CRASH_CHILD"

var crashKey = []byte("callbacks-crash-test-key-0123")

func crashJournalConfig(kind, target, prefix string) journal.Config {
	cfg := journal.Config{HashKey: crashKey, Prefix: prefix}
	if kind == "sqlite" {
		cfg.Backend = sqlite.Backend{Path: target}
	} else {
		cfg.Backend = postgres.Backend{DSN: target}
	}
	return cfg
}

var crashArgs = map[string]any{"amount": 42, "to": "acct-7"}

// crashChargeFixture is the agent both processes run: charge is mutating, with the
// retry orchestrator and the journal; confirm turns on ConfirmUnknownReplays.
func crashChargeFixture(t *testing.T, cfg journal.Config, url string, confirm bool, steps ...breakertest.Step) (*callbackstest.Fixture, *journal.Journal) {
	t.Helper()
	var j *journal.Journal
	f := callbackstest.New(t, callbackstest.Config{
		Steps:     steps,
		Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge"}, ConfirmUnknownReplays: confirm}},
		Prepare: func(f *callbackstest.Fixture, c *callbacks.Config) {
			var err error
			cfg.Clock = f.Clock
			j, err = journal.Open(context.Background(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = j.Close() })
			c.SideEffects.Retry = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: f.Clock})
			c.SideEffects.Journal = j
		},
		ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
			return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "charge", http.MethodPost, url))}
		},
	})
	return f, j
}

func TestCrashChildCharge(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("the child process of TestCrashBetweenIntentAndOutcome")
	}
	parts := strings.SplitN(spec, "|", 4)
	f, _ := crashChargeFixture(t, crashJournalConfig(parts[0], parts[1], parts[2]), parts[3], false,
		breakertest.Call("charge", crashArgs), breakertest.Text("done"))
	f.Run(t, "pay acct-7 42") // killed while the server holds the request
	t.Fatal("the charge was answered; the parent should have killed this process")
}

// holdingServer is a payments service that records each request's key and applies
// each key once. The very first request is applied and then held without an answer
// until the client goes away; a repeat of a key answers that it was replayed; any
// other key is a new charge, answered at once.
type holdingServer struct {
	*httptest.Server
	first chan string
	mu    sync.Mutex
	keys  []string
}

func newHoldingServer(t *testing.T) *holdingServer {
	s := &holdingServer{first: make(chan string, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get(httptransport.DefaultIdempotencyHeader)
		s.mu.Lock()
		seen := slices.Contains(s.keys, key)
		s.keys = append(s.keys, key)
		n := len(s.keys)
		s.mu.Unlock()
		switch {
		case seen:
			_, _ = w.Write([]byte(`{"charged": true, "replayed": true}`))
		case n > 1:
			_, _ = w.Write([]byte(`{"charged": true}`)) // a second charge, under a new key
		default:
			s.first <- key
			<-r.Context().Done() // applied; the answer never leaves
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *holdingServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// TestCrashBetweenIntentAndOutcome is issue 18b, on both journal backends: an agent
// process is killed with SIGKILL after its charge's intent was made durable and the
// server applied it, before any outcome. The restarted agent, asked for the same
// charge, answers "outcome unknown" without sending anything; with
// ConfirmUnknownReplays and the user's confirmation it resends under the ORIGINAL key,
// so the server charges once.
func TestCrashBetweenIntentAndOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	type target struct{ kind, target, prefix string }
	targets := map[string]func(t *testing.T) target{
		"sqlite": func(t *testing.T) target {
			return target{"sqlite", filepath.Join(t.TempDir(), "j.db"), journal.DefaultPrefix}
		},
		"postgres": func(t *testing.T) target {
			dsn := testenv.PostgresDSN(t)
			prefix := testenv.PostgresJournalPrefix(t)
			return target{"postgres", dsn, prefix}
		},
	}
	for name, mk := range targets {
		t.Run(name, func(t *testing.T) {
			tg := mk(t)
			srv := newHoldingServer(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildCharge$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+tg.kind+"|"+tg.target+"|"+tg.prefix+"|"+srv.URL+"/charge")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var key string
			select {
			case key = <-srv.first:
			case err := <-exited:
				t.Fatalf("the child ended before its charge reached the server: %v\n%s", err, out.String())
			case <-time.After(testwait.Bound): // a bound on real I/O, never reached when healthy
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("the child's charge never reached the server\n%s", out.String())
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			err := <-exited
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v", err)

			cfg := crashJournalConfig(tg.kind, tg.target, tg.prefix)
			if tg.kind == "postgres" {
				waitForLease(t, tg.target, tg.prefix, cfg)
			}
			// The restarted agent: no operator has looked, and it did not even reconcile yet.
			f, j := crashChargeFixture(t, cfg, srv.URL+"/charge", false, breakertest.Call("charge", crashArgs), breakertest.Text("done"))
			turn := f.Run(t, "pay acct-7 42")
			require.Equal(t, []any{payloads.TypeOutcomeUnknown}, responseTypes(turn))
			require.Contains(t, turn.FunctionResponses()[0].Response[payloads.KeyReason], "may already have been carried out")
			require.Equal(t, []string{key}, srv.requests(), "nothing was sent again")

			// Start-up reconciliation settles the dead process's intent for an operator.
			rep, err := j.Reconcile(t.Context())
			require.NoError(t, err)
			require.Empty(t, rep.Skipped)
			require.Len(t, rep.Awaiting, 1)
			require.Equal(t, key, rep.Awaiting[0].IdempotencyKey)
			require.NoError(t, j.Close())

			// With ConfirmUnknownReplays the user is asked, and confirms.
			g, j2 := crashChargeFixture(t, cfg, srv.URL+"/charge", true, breakertest.Call("charge", crashArgs), breakertest.Text("done"))
			turn = g.Run(t, "pay acct-7 42")
			require.Equal(t, []string{key}, srv.requests(), "not sent before the user answers")
			req, _, _ := confirmationRequest(t, turn)
			resumed := answer(t, g, req, true)
			rfrs := resumed.FunctionResponses()
			require.Len(t, rfrs, 1)
			require.Equal(t, "ok", rfrs[0].Response["status"])
			require.Equal(t, []string{key, key}, srv.requests(), "resent once, under the original key")
			intents, err := j2.Intents(t.Context(), journal.Filter{Tool: "charge"})
			require.NoError(t, err)
			require.Len(t, intents, 2)
			for _, in := range intents {
				require.Equal(t, key, in.IdempotencyKey)
			}
			g.RequireClean(t)
		})
	}
}

// waitForLease blocks, on the server, until no session holds the killed process's
// owner lease (the server ends a killed client's session when it reads the closed
// socket, which can trail the exit by a moment).
func waitForLease(t *testing.T, dsn, prefix string, cfg journal.Config) {
	t.Helper()
	j, err := journal.Open(t.Context(), cfg)
	require.NoError(t, err)
	open, err := j.Intents(t.Context(), journal.Filter{States: []journal.State{journal.StateOpen}})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	require.Len(t, open, 1, "the killed process's intent is open")
	c, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Exec(t.Context(), "SET lock_timeout = '30s'")
	require.NoError(t, err)
	k := postgres.LeaseKey(prefix, open[0].Owner)
	_, err = c.Exec(t.Context(), "SELECT pg_advisory_lock($1)", k)
	require.NoError(t, err)
	_, err = c.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", k)
	require.NoError(t, err)
}
