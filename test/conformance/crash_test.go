package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// crashChildEnv carries "kind|target|prefix|url" to the child process of case 5.
const crashChildEnv = "AGENTBREAKER_CONFORMANCE_CRASH_CHILD"

var crashArgs = map[string]any{"amount": 42, "to": "acct-7"}

// crashTarget is where the journal of case 5 lives.
type crashTarget struct{ kind, target, prefix string }

func (c crashTarget) backend() journal.Backend {
	if c.kind == "sqlite" {
		return sqlite.Backend{Path: c.target}
	}
	return postgres.Backend{DSN: c.target}
}

// crashWorld is the agent process of case 5: a mutating charge tool with the retry
// orchestrator and the journal; confirm turns on ConfirmUnknownReplays.
func crashWorld(t *testing.T, tg crashTarget, url string, confirm bool) *world {
	t.Helper()
	return newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
		policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
		mutating:     []string{"charge"},
		backend:      tg.backend(),
		prefix:       tg.prefix,
		confirm:      confirm,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "charge", http.MethodPost, url, clientOpts{})}
		},
	})
}

// TestCrashChild is the process case 5 kills: it charges through the real runner and
// is killed while the payments server holds the request.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("the child process of TestCase5CrashAfterIntentBeforeOutcome")
	}
	parts := strings.SplitN(spec, "|", 4)
	w := crashWorld(t, crashTarget{parts[0], parts[1], parts[2]}, parts[3], false)
	w.turn(t, callOnce("charge", crashArgs))
	t.Fatal("the charge was answered; the parent should have killed this process")
}

// Case 5: a worker crash after the dispatch intent, before the outcome is journaled.
//
// A child process (this test binary) charges; the payments server takes the request
// (and applies it) and holds the answer; the parent kills the child with SIGKILL.
// Expected per the journal docs ("A crash between the two leaves the intent open, and
// the next process finds it"; Unresolved: "A mutation with any of them must not be sent
// again without approval") and the README (the plugin "asks the journal for unresolved
// intents of the same tool and arguments ... in this process or in one that crashed
// between the intent and the outcome. If there is one the call is not sent"):
//
//   - the restarted agent, asked for the same charge, answers "outcome unknown" and
//     sends nothing (no resend under a new key);
//   - start-up reconciliation, with no status lookup, leaves the intent for an operator
//     (Reconcile settles a dead process's open intents on its first run);
//   - with ConfirmUnknownReplays, the user confirming sends it once more under the
//     ORIGINAL idempotency key.
func TestCase5CrashAfterIntentBeforeOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	t.Parallel()
	targets := map[string]func(t *testing.T) crashTarget{
		"sqlite": func(t *testing.T) crashTarget {
			return crashTarget{"sqlite", filepath.Join(t.TempDir(), "journal.db"), ""}
		},
		"postgres": func(t *testing.T) crashTarget {
			dsn := testenv.PostgresDSN(t)
			prefix := testenv.PostgresJournalPrefix(t)
			return crashTarget{"postgres", dsn, prefix}
		},
	}
	for name, mk := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := mk(t)
			held := make(chan string, 1)
			srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					held <- r.Header.Get("Idempotency-Key") // applied; the answer never leaves
					<-r.Context().Done()
					return
				}
				_, _ = w.Write([]byte(`{"status": "ok", "charged": true}`))
			})
			url := srv.URL + "/charge"

			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+tg.kind+"|"+tg.target+"|"+tg.prefix+"|"+url)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var key string
			select {
			case key = <-held:
			case err := <-exited:
				t.Fatalf("the child ended before its charge reached the server: %v\n%s", err, out.String())
			case <-time.After(2 * time.Minute): // a bound on real I/O, never reached when healthy
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
			require.NotEmpty(t, key)
			if tg.kind == "postgres" {
				waitForLease(t, tg)
			}

			// The restarted agent: no operator has looked, it has not reconciled yet.
			w := crashWorld(t, tg, url, false)
			w.clk.Advance(time.Minute) // the restart comes later than the crash
			open, err := w.journal.Intents(t.Context(), journal.Filter{States: []journal.State{journal.StateOpen}})
			require.NoError(t, err)
			require.Len(t, open, 1, "the crash left the intent open")
			require.Equal(t, key, open[0].IdempotencyKey, "the intent was durable before the request left")
			require.Equal(t, 1, open[0].Attempt)
			turn := w.turn(t, callOnce("charge", crashArgs))
			rs := responses(turn)
			require.Len(t, rs, 1)
			require.Equal(t, payloads.TypeOutcomeUnknown, rs[0][payloads.KeyResponseType])
			require.Contains(t, rs[0][payloads.KeyReason], "may already have been carried out")
			require.Equal(t, []received{{http.MethodPost, "/charge", key, `{"amount":42,"to":"acct-7"}`}}, srv.requests(""),
				"nothing was sent again, under any key")
			require.Empty(t, w.records(t, "call_outcome", "charge"), "no call was made")
			refused := w.eventsOf(callbacks.EventRetryRefused)
			require.Len(t, refused, 1)
			require.Equal(t, retry.ReasonUnknownOutcome, refused[0].RetryReason)
			b := w.breaker(t, "payments")
			require.Equal(t, breaker.Closed, b.State())
			require.Equal(t, breaker.Counts{}, b.Snapshot().Window, "a refused call is not measured")
			w.requireQueueEmpty(t)

			// Start-up reconciliation: the dead process's intent waits for an operator.
			rep, err := w.journal.Reconcile(t.Context())
			require.NoError(t, err)
			require.Empty(t, rep.Skipped)
			require.Len(t, rep.Awaiting, 1)
			require.Equal(t, key, rep.Awaiting[0].IdempotencyKey)
			pending, err := w.journal.Pending(t.Context())
			require.NoError(t, err)
			require.Len(t, pending, 1)
			requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
			w.requireClean(t)
			require.NoError(t, w.journal.Close())

			// With ConfirmUnknownReplays the user is asked first, and confirms: the charge
			// goes out once more, under the original key.
			g := crashWorld(t, tg, url, true)
			g.clk.Advance(2 * time.Minute)
			turn = g.turn(t, callOnce("charge", crashArgs))
			require.Equal(t, 1, srv.count("/charge"), "not sent before the user answers")
			resumed := g.answerConfirmation(t, turn, true)
			rs = responses(resumed)
			require.Len(t, rs, 1)
			require.Equal(t, map[string]any{"status": "ok", "charged": true}, rs[0])
			got := srv.requests("/charge")
			require.Len(t, got, 2)
			require.Equal(t, key, got[1].Key, "resent under the original idempotency key")
			in := g.intents(t, "charge")
			require.Len(t, in, 2)
			require.Equal(t, journal.StateApproved, in[0].State)
			require.Equal(t, journal.StateSucceeded, in[1].State)
			require.Equal(t, key, in[1].IdempotencyKey)
			requireNoUnsafeReplay(t, g, srv, map[string]string{"charge": "/charge"})
			g.requireQueueEmpty(t)
			g.requireClean(t)
		})
	}
}

// answerConfirmation finds the one confirmation request of a turn and answers it the
// way adk-go expects: a function response named adk_request_confirmation with the
// request's call ID.
func (w *world) answerConfirmation(t *testing.T, turn *breakertest.Turn, confirmed bool) *breakertest.Turn {
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
	require.Contains(t, string(raw), "charge")
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: reqs[0].ID, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": confirmed},
	}}}}
	resumed := &breakertest.Turn{}
	for ev, err := range w.workers[0].Runner.Run(context.Background(), "user", w.sessions[0], msg, agent.RunConfig{}) {
		require.NoError(t, err)
		if ev != nil {
			resumed.Events = append(resumed.Events, ev)
		}
	}
	return resumed
}

// waitForLease blocks until the PostgreSQL server has ended the killed process's
// session, which releases its owner lease (the server notices a killed client when it
// reads the closed socket, which can trail the exit by a moment).
func waitForLease(t *testing.T, tg crashTarget) {
	t.Helper()
	j, err := journal.Open(t.Context(), journal.Config{Backend: tg.backend(), Prefix: tg.prefix, HashKey: hashKey})
	require.NoError(t, err)
	open, err := j.Intents(t.Context(), journal.Filter{States: []journal.State{journal.StateOpen}})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	require.Len(t, open, 1, "the killed process's intent is open")
	c, err := pgx.Connect(t.Context(), tg.target)
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Exec(t.Context(), "SET lock_timeout = '30s'")
	require.NoError(t, err)
	k := postgres.LeaseKey(tg.prefix, open[0].Owner)
	_, err = c.Exec(t.Context(), "SELECT pg_advisory_lock($1)", k)
	require.NoError(t, err)
	_, err = c.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", k)
	require.NoError(t, err)
}
