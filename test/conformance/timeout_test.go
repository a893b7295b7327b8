package conformance_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// clientTimer stands in for the timer of httptransport's Config.Timeout: the test
// fires it by hand (httptransport docs: "AfterFunc ... tests pass a timer they fire by
// hand"), so the client gives up without the test waiting for real time.
type clientTimer struct {
	mu    sync.Mutex
	fires []func()
}

func (c *clientTimer) afterFunc(_ time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.fires)
	c.fires = append(c.fires, f)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := c.fires[i] != nil
		c.fires[i] = nil
		return stopped
	}
}

// fireLatest runs the timer of the latest round trip, as its timeout would.
func (c *clientTimer) fireLatest() {
	c.mu.Lock()
	var f func()
	if n := len(c.fires); n > 0 {
		f, c.fires[n-1] = c.fires[n-1], nil
	}
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// clientTimeout is the tools' client timeout in case 2 (the fake clock moves by it
// while the server holds the request).
const clientTimeout = 5 * time.Second

// Case 2: the request is accepted and its response delayed past the client timeout.
//
// The server takes the request (it counts it), then holds the answer; meanwhile the
// client's own timeout fires (httptransport: "a failure after the request was written
// (a timeout, a reset) is UNKNOWN"; Config.Timeout: "when it fires the call counts
// against the dependency"). Expected per the README ("a side effect whose outcome is
// UNKNOWN is never sent again on its own"; "UNKNOWN ... is retried only when the
// operation is declared idempotent or reconciliation proved it was not applied") and
// callbacks.Config.SideEffects.MutatingTools (the model "gets an outcome-unknown payload telling it
// not to repeat the action"):
//
//   - mutation, nothing settles it: the model is told the outcome is unknown, its
//     re-issue is answered locally with the same payload, the server counts 1, and
//     the journal holds the unresolved intent;
//   - mutation whose status lookup proves it was not applied: the re-issue is sent
//     under the same idempotency key (server counts 2, one key);
//   - a read (idempotent: not in MutatingTools): the re-issue is sent, and the timed-out
//     attempt is superseded by the success.
func TestCase2ResponseDelayedPastClientTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mutating   bool
		notApplied bool // a status lookup proves the held request was not applied

		wantCount    int    // requests the server counted
		wantSecond   string // response_type of the re-issue's answer, "" for the real result
		wantFirst    journal.State
		wantBacklog  int
		wantRefusals int
	}{
		{name: "mutation never replayed", mutating: true,
			wantCount: 1, wantSecond: payloads.TypeOutcomeUnknown, wantFirst: journal.StateAwaitingOperator, wantBacklog: 1, wantRefusals: 1},
		{name: "mutation proved not applied is retried", mutating: true, notApplied: true,
			wantCount: 2, wantFirst: journal.StateNotApplied},
		{name: "idempotent read is retried", mutating: false,
			wantCount: 2, wantFirst: journal.StateSuperseded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timer := &clientTimer{}
			var w *world
			var applied sync.Map // idempotency keys the server applied
			srv := newServer(t, func(n int, rw http.ResponseWriter, r *http.Request) {
				if n == 1 {
					// Accepted, answer delayed: the client's timeout passes first.
					w.clk.Advance(clientTimeout)
					timer.fireLatest()
					<-r.Context().Done()
					return
				}
				applied.Store(r.Header.Get("Idempotency-Key"), true)
				_, _ = rw.Write([]byte(`{"status": "ok", "done": true}`))
			})
			toolName, path := "lookup_order", "/orders"
			var mutating []string
			if tt.mutating {
				toolName, path = "charge", "/charge"
				mutating = []string{"charge"}
			}
			var lookups map[string]journal.StatusLookup
			if tt.notApplied {
				lookups = map[string]journal.StatusLookup{"payments": func(_ context.Context, in journal.Intent) (journal.Status, error) {
					if _, ok := applied.Load(in.IdempotencyKey); ok {
						return journal.StatusApplied, nil
					}
					return journal.StatusNotApplied, nil
				}}
			}
			w = newWorld(t, setup{
				dependencies: map[string]dependencymap.Dependency{"payments": {Tools: []string{toolName}}},
				policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
				mutating:     mutating,
				lookups:      lookups,
				tools: func(w *world) []tool.Tool {
					return []tool.Tool{w.httpTool(t, toolName, http.MethodPost, srv.URL+path,
						clientOpts{timeout: clientTimeout, afterFunc: timer.afterFunc})}
				},
			})
			args := map[string]any{"order": "o-1", "amount": 42}
			turn := w.turn(t, steps(call(toolName, args), func() breakertest.Step {
				w.clk.Advance(2 * time.Second) // the model thinks, then repeats the call
				return breakertest.Call(toolName, args)
			}))

			// The model: the first answer says the outcome is unknown (a mutation) or
			// that the read failed; neither carries anything the server wrote.
			rs := responses(turn)
			require.Len(t, rs, 2)
			require.Equal(t, string(classify.ClassTimeout), rs[0][payloads.KeyErrorClass])
			if tt.mutating {
				require.Equal(t, payloads.TypeOutcomeUnknown, rs[0][payloads.KeyResponseType])
				require.Equal(t, payloads.StatusOutcomeUnknown, rs[0][payloads.KeyStatus])
				// callbacks docs: the outcome-unknown payload ("do not repeat this action").
				require.Contains(t, strings.ToLower(rs[0][payloads.KeyInstruction].(string)), "do not repeat this action")
				require.Equal(t, false, rs[0][payloads.KeyRetryAdvised])
			} else {
				require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
			}
			if tt.wantSecond != "" {
				require.Equal(t, tt.wantSecond, rs[1][payloads.KeyResponseType])
				// README: the repeat is not sent; the model gets the outcome-unknown
				// payload ("may already have been carried out; do not repeat it").
				require.Contains(t, rs[1][payloads.KeyReason], "may already have been carried out")
			} else {
				require.Equal(t, map[string]any{"status": "ok", "done": true}, rs[1])
			}

			// Remote attempts, and the key of each.
			got := srv.requests(path)
			require.Len(t, got, tt.wantCount)
			for _, r := range got {
				require.Equal(t, got[0].Key, r.Key, "one operation, one idempotency key")
			}

			// Breaker: closed; the timeout counted as the dependency's failure.
			b := w.breaker(t, "payments")
			require.Equal(t, breaker.Closed, b.State())
			require.Equal(t, int64(1), b.Snapshot().Window.Failures)

			w.requireQueueEmpty(t)

			// Audit: the first intent, UNKNOWN/timeout, settled as the case says; a
			// second intent only when a second attempt was sent, under the same key.
			in := w.intents(t, toolName)
			require.Len(t, in, tt.wantCount)
			require.Equal(t, classify.Unknown, in[0].Outcome)
			require.Equal(t, classify.ClassTimeout, in[0].ErrorClass)
			require.Equal(t, tt.wantFirst, in[0].State)
			require.Equal(t, got[0].Key, in[0].IdempotencyKey)
			if tt.wantCount == 2 {
				require.Equal(t, journal.StateSucceeded, in[1].State)
				require.Equal(t, in[0].IdempotencyKey, in[1].IdempotencyKey)
			}
			hash, _, err := w.journal.HashArgs(args)
			require.NoError(t, err)
			unresolved, err := w.journal.Unresolved(context.Background(), toolName, hash)
			require.NoError(t, err)
			require.Len(t, unresolved, tt.wantBacklog, "unresolved intents")
			n, _, err := w.journal.Backlog(context.Background())
			require.NoError(t, err)
			require.Equal(t, tt.wantBacklog, n, "journal backlog")

			recs := w.records(t, "call_outcome", toolName)
			require.Equal(t, "UNKNOWN", recs[0]["outcome"])
			require.Equal(t, "timeout", recs[0]["error_class"])
			require.Equal(t, "counts", recs[0]["verdict"])
			require.Equal(t, float64(clientTimeout.Milliseconds()), recs[0]["elapsed_ms"])
			require.Len(t, recs, tt.wantCount, "one call record per call sent")
			refused := w.eventsOf(callbacks.EventRetryRefused)
			require.Len(t, refused, tt.wantRefusals)
			for _, e := range refused {
				require.Equal(t, retry.ReasonUnknownOutcome, e.RetryReason)
			}

			require.False(t, strings.Contains(w.logs.text(), `"done":true`), "no result body in the logs")

			// A later turn (a new invocation, so a new logical operation for the retry
			// orchestrator) asking for the same mutation: while the earlier attempt is
			// unresolved it is answered "outcome unknown" and not sent (README: the plugin
			// "asks the journal for unresolved intents of the same tool and arguments").
			if tt.mutating {
				w.clk.Advance(time.Minute)
				rs = responses(w.turn(t, callOnce(toolName, args)))
				require.Len(t, rs, 1)
				if tt.wantBacklog > 0 {
					require.Equal(t, payloads.TypeOutcomeUnknown, rs[0][payloads.KeyResponseType])
					require.Contains(t, rs[0][payloads.KeyReason], "may already have been carried out")
					require.Len(t, srv.requests(path), tt.wantCount, "not sent again")
				} else {
					require.Equal(t, map[string]any{"status": "ok", "done": true}, rs[0], "settled: new work")
				}
			}
			requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
			w.requireClean(t)
		})
	}
}
