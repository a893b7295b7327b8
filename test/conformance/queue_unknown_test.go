package conformance_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// Case 6, with the invariant: a mutation whose earlier attempt's outcome is UNKNOWN is
// not queued when the breaker opens, even from a later turn.
//
// The charge times out after the server took it (UNKNOWN), which opens payments'
// breaker (volume gate 1). A later turn asks for the same charge. Expected per the
// README ("A mutation whose earlier attempt has an unknown outcome is never queued or
// replayed automatically: the plugin answers it "outcome unknown"") and the admission
// docs ("Work whose idempotency key has an unsettled intent in the journal ... is
// neither queued nor replayed automatically"): the model is told the outcome is
// unknown, nothing is queued, and after the dependency recovers nothing is replayed:
// the server counts one charge.
func TestCase6UnknownMutationIsNotQueued(t *testing.T) {
	t.Parallel()
	timer := &clientTimer{}
	var w *world
	srv := newServer(t, func(n int, rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/charge" && n == 1 {
			w.clk.Advance(clientTimeout)
			timer.fireLatest()
			<-r.Context().Done()
			return
		}
		_, _ = rw.Write([]byte(`{"status": "ok"}`))
	})
	w = newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "lookup_balance"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1},
		}},
		mutating:   []string{"charge"},
		queueTools: map[string]callbacks.QueueTool{"charge": {MaxWait: time.Hour, Priority: admission.PriorityHigh}},
		runQueue:   true,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{timeout: clientTimeout, afterFunc: timer.afterFunc}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	args := map[string]any{"amount": 42, "to": "acct-7"}

	rs := responses(w.turn(t, callOnce("charge", args)))
	require.Equal(t, payloads.TypeOutcomeUnknown, rs[0][payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State(), "the UNKNOWN timeout counted")

	w.clk.Advance(time.Second)
	rs = responses(w.turn(t, callOnce("charge", args)))
	require.Len(t, rs, 1)
	require.Equal(t, payloads.TypeOutcomeUnknown, rs[0][payloads.KeyResponseType], "not queued: its earlier attempt may have been applied")
	require.Empty(t, w.queued(t), "nothing queued")
	require.Empty(t, w.eventsOf(callbacks.EventQueued))

	// Recovery: the probe closes the breaker; the Run loop has nothing to replay.
	w.clk.Advance(30 * time.Second)
	require.Equal(t, map[string]any{"status": "ok"}, responses(w.turn(t, callOnce("lookup_balance", nil)))[0])
	require.Equal(t, breaker.Closed, b.State())
	rep, err := w.queue.Drain(context.Background(), "payments")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{}, rep)
	require.Equal(t, 1, srv.count("/charge"), "one charge reached the server")
	in := w.intents(t, "charge")
	require.Len(t, in, 1)
	require.Equal(t, journal.StateAwaitingOperator, in[0].State)
	require.Empty(t, w.queueEvents.list())
	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
	w.requireClean(t)
}

// Case 6, after issue 24b (a mutation is never the probe). The charge is queued while
// payments is down (key K). After the cooldown the model asks for the same charge in
// the same turn. It used to go out as the probe under K, into a dependency that had
// been failing: it timed out after the server took it (UNKNOWN), and the queue later
// had to hand the item over. Now the charge is not the probe: it is answered without
// reaching the server and the breaker stays open; the read-only balance lookup probes
// and closes it, and the queue replays the charge exactly once, under K.
func TestCase6QueuedChargeAskedAgainAfterTheCooldownIsNotTheProbe(t *testing.T) {
	t.Parallel()
	var w *world
	srv := newServer(t, func(_ int, rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" && breakerState(w, "payments") == breaker.Closed { // the first lookup fails
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = rw.Write([]byte(`{"status": "ok"}`))
	})
	cooldown := 30 * time.Second
	w = newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "lookup_balance"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1},
		}},
		mutating:   []string{"charge"},
		queueTools: map[string]callbacks.QueueTool{"charge": {MaxWait: time.Hour, Priority: admission.PriorityHigh}},
		replay:     replayTo(t, srv.URL+"/charge"),
		runQueue:   true,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	args := map[string]any{"amount": 42, "to": "acct-7"}
	responses(w.turn(t, callOnce("lookup_balance", nil)))
	require.Equal(t, breaker.Open, b.State())

	turn := w.turn(t, steps(call("charge", args), func() breakertest.Step {
		w.clk.Advance(cooldown)
		return breakertest.Call("charge", args)
	}))
	rs := responses(turn)
	require.Len(t, rs, 2)
	require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType])
	require.NotEqual(t, payloads.TypeOutcomeUnknown, rs[1][payloads.KeyResponseType], "the charge was not sent as the probe")
	require.Empty(t, srv.requests("/charge"), "no charge reached the server while the breaker refused calls")
	require.Equal(t, breaker.Open, b.State(), "the charge did not end the open period")
	items := w.queued(t)
	require.Len(t, items, 1, "asked twice, queued once: a second item would replay the charge twice")
	key := items[0].IdempotencyKey

	// The read-only lookup is the probe; the queue replays the charge once, under K.
	require.Equal(t, map[string]any{"status": "ok"}, responses(w.turn(t, callOnce("lookup_balance", nil)))[0])
	require.Equal(t, breaker.Closed, b.State())
	waitQueueEvent(t, w, admission.EventReplayed, 1)
	charges := srv.requests("/charge")
	require.Len(t, charges, 1, "the charge reached the server once")
	require.Equal(t, key, charges[0].Key)
	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
	w.requireClean(t)
}

// breakerState reads a breaker's state from any goroutine (no test assertions).
func breakerState(w *world, key string) breaker.State {
	b, _ := w.deps.Get(key)
	return b.State()
}
