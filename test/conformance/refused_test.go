package conformance_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// deadAddr returns a local TCP address nothing listens on: connecting to it is refused
// by the kernel before a byte of the request leaves.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Case 1: connection refused before bytes leave the worker.
//
// Expected (classify docs: "dial: connection refused → FAILED_BEFORE_SEND,
// connection_refused, counts, retryable"; design document: only UNKNOWN needs
// reconciliation, so a FAILED_BEFORE_SEND mutation is safe to send again): the charge's
// first attempt is refused by the kernel, the model gets agentbreaker's "failed" payload
// (not "outcome unknown"), and its identical re-issue is the operation's second
// attempt, sent under the same idempotency key, and succeeds. The payments server
// counts exactly one request.
func TestCase1ConnectionRefusedBeforeBytesLeave(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status": "ok", "charged": true}`))
	})
	dead := deadAddr(t)
	var dials, refused atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		if dials.Add(1) == 1 { // the first connection goes to a port nobody listens on
			c, err := d.DialContext(ctx, network, dead)
			if err != nil {
				refused.Add(1)
			}
			return c, err
		}
		return d.DialContext(ctx, network, addr)
	}
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
		policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
		mutating:     []string{"charge"},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{dial: dial})}
		},
	})
	args := map[string]any{"amount": 42, "to": "acct-7"}

	turn := w.turn(t, steps(call("charge", args), call("charge", args)))

	// The model: a failure it can reason about, then the real result.
	rs := responses(turn)
	require.Len(t, rs, 2)
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, string(classify.ClassConnectionRefused), rs[0][payloads.KeyErrorClass])
	require.Equal(t, payloads.StatusError, rs[0][payloads.KeyStatus])
	require.Equal(t, map[string]any{"status": "ok", "charged": true}, rs[1])

	// Remote attempts: two dials, one refused by the kernel, one request at the server.
	require.Equal(t, int64(2), dials.Load())
	require.Equal(t, int64(1), refused.Load())
	got := srv.requests("/charge")
	require.Len(t, got, 1)

	// Breaker: closed, with the refusal counted (it is the dependency's failure).
	b := w.breaker(t, "payments")
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, breaker.Counts{Calls: 2, Failures: 1}, b.Snapshot().Window)
	require.Empty(t, w.fromTo("payments"))

	// Queue: untouched.
	w.requireQueueEmpty(t)

	// Audit: two intents of one operation (one request id, one key, the key the server
	// got), attempt 1 FAILED_BEFORE_SEND, attempt 2 SUCCEEDED; two call records.
	in := w.intents(t, "charge")
	require.Len(t, in, 2)
	require.Equal(t, in[0].RequestID, in[1].RequestID)
	require.Equal(t, in[0].IdempotencyKey, in[1].IdempotencyKey)
	require.Equal(t, got[0].Key, in[1].IdempotencyKey)
	require.Equal(t, []int{1, 2}, []int{in[0].Attempt, in[1].Attempt})
	require.Equal(t, journal.StateFailedBeforeSend, in[0].State)
	require.Equal(t, classify.FailedBeforeSend, in[0].Outcome)
	require.Equal(t, classify.ClassConnectionRefused, in[0].ErrorClass)
	require.Equal(t, journal.StateSucceeded, in[1].State)
	recs := w.records(t, "call_outcome", "charge")
	require.Equal(t, []any{"FAILED_BEFORE_SEND", "SUCCEEDED"}, field(recs, "outcome"))
	require.Equal(t, []any{"connection_refused", "none"}, field(recs, "error_class"))
	require.Equal(t, []any{"counts", "healthy"}, field(recs, "verdict"))
	require.Equal(t, []any{policyVersion, policyVersion}, field(recs, "policy_version"))
	att := w.retryRecords(t, "charge")
	require.Equal(t, []any{1.0, 2.0}, field(att, "attempt"))
	require.Equal(t, att[0]["request_id"], att[1]["request_id"])

	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
	w.requireClean(t)
}
