package conformance_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// Case 4: five failures, then a successful half-open probe.
//
// Policy: 50% over at least 5 calls, 30 s cooldown, no jitter. Expected per "How the
// breaker decides": the fifth failure (5 of 5 ≥ 50%, volume gate 5 met) opens the
// breaker; calls before the reopen time are answered locally with the unavailable
// payload and the time left; "the first Allow at or after the reopen time → half_open,
// and that call is the first probe"; the probe succeeding closes the breaker "(its
// window emptied)". The server counts 5 + 1 requests; the transitions are
// closed→open (failure_rate), open→half_open (cooldown_elapsed), half_open→closed
// (probe_succeeded).
func TestCase4FiveFailuresThenSuccessfulProbe(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 5 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("<html>upstream connect error</html>"))
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok", "name": "Ada"}`))
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"},
			Policy: breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 5, Cooldown: cooldown, Jitter: -1}}},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "lookup_customer", http.MethodGet, srv.URL+"/customers", clientOpts{})}
		},
	})
	b := w.breaker(t, "crm")
	lookup := func(id int) []map[string]any {
		return responses(w.turn(t, callOnce("lookup_customer", map[string]any{"id": id})))
	}

	// Five failures, one turn each (a second apart): the fifth opens the breaker.
	for i := 1; i <= 5; i++ {
		rs := lookup(i)
		require.Len(t, rs, 1)
		require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType], "call %d", i)
		require.Equal(t, string(classify.ClassHTTP5xx), rs[0][payloads.KeyErrorClass])
		if i < 5 {
			require.Equal(t, breaker.Closed, b.State(), "after %d failures", i)
			w.clk.Advance(time.Second)
		}
	}
	openedAt := w.clk.Now()
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, openedAt, b.Snapshot().OpenedAt)

	// During the cooldown: answered locally, no early probe.
	for _, at := range []time.Duration{0, cooldown - time.Second} {
		w.clk.Set(openedAt.Add(at))
		rs := lookup(100)
		require.Equal(t, payloads.TypeUnavailable, rs[0][payloads.KeyResponseType], "at +%s", at)
		require.Equal(t, (cooldown - at).Seconds(), rs[0][payloads.KeyRetryAfterSeconds], "at +%s", at)
		require.Equal(t, 5, srv.count("/customers"), "no request during the cooldown")
	}

	// At the reopen time: the next call is the probe; it succeeds and closes the breaker.
	w.clk.Set(openedAt.Add(cooldown))
	rs := lookup(6)
	require.Equal(t, map[string]any{"status": "ok", "name": "Ada"}, rs[0])
	require.Equal(t, 6, srv.count("/customers"))
	require.Equal(t, breaker.Closed, b.State())
	snap := b.Snapshot()
	require.Equal(t, breaker.Counts{}, snap.Window, "closing empties the window")
	require.Zero(t, snap.FailedProbes)
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("crm"))
	ev := w.transitions.list()
	require.Equal(t, openedAt.Add(cooldown), ev[0].ReopenAt, "the reopen time is the cooldown, no jitter")
	require.Equal(t, breaker.Counts{Calls: 5, Failures: 5}, ev[0].Window)
	require.Equal(t, policyVersion, ev[0].PolicyVersion)

	w.requireQueueEmpty(t)

	// Audit: six attempts journaled (short-circuited calls are not attempts), six call
	// records, two short-circuit records with the open breaker's state.
	in := w.intents(t, "lookup_customer")
	require.Len(t, in, 6)
	for i, x := range in[:5] {
		require.Equal(t, journal.StateFailed, x.State, "intent %d", i)
		require.Equal(t, classify.ClassHTTP5xx, x.ErrorClass)
	}
	require.Equal(t, journal.StateSucceeded, in[5].State)
	recs := w.records(t, "call_outcome", "lookup_customer")
	require.Equal(t, []any{"FAILED", "FAILED", "FAILED", "FAILED", "FAILED", "SUCCEEDED"}, field(recs, "outcome"))
	// README: retry attempt records "carry the state of the breaker that admitted the call".
	att := w.retryRecords(t, "lookup_customer")
	require.Equal(t, []any{"closed", "closed", "closed", "closed", "closed", "half_open"}, field(att, "breaker_state"))
	shorts := w.records(t, "short_circuit", "lookup_customer")
	require.Equal(t, []any{"open", "open"}, field(shorts, "breaker_state"))
	require.Len(t, w.eventsOf(callbacks.EventShortCircuit), 2)
	requireNoUpstreamText(t, w, nil, "upstream connect error")

	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}

// Case 4, with the model's tool list: a hidden tool comes back for the probe.
//
// Expected per the README ("With Guidance.LoopGuard.HideOpenTools, a tool is left out of the
// model's tool list only while its breaker refuses calls ... At the first model call
// after the cooldown ends it is offered again (in the same turn too), so the model's
// next call can be the probe. Hiding removes the declaration only: a call the model
// makes anyway still goes through the breaker ... A single caller therefore brings a
// recovered dependency back within one cooldown."): in one turn the failing tool is
// hidden while the breaker is open, a call made anyway is answered unavailable, the tool
// is offered again at the first model call after the cooldown, and that call is the
// probe that closes the breaker.
func TestCase4HiddenToolIsOfferedBackForTheProbe(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok", "name": "Ada"}`))
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1}}},
		loopGuard: loopguard.Config{HideOpenTools: true},
		tools: func(w *world) []tool.Tool {
			note, err := functiontool.New(functiontool.Config{Name: "take_note", Description: "Takes a note."},
				func(agent.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil })
			require.NoError(t, err)
			return []tool.Tool{w.httpTool(t, "lookup_customer", http.MethodGet, srv.URL+"/customers", clientOpts{}), note}
		},
	})
	b := w.breaker(t, "crm")
	args := map[string]any{"id": 7}
	var offered []bool // per model request: was lookup_customer declared?
	var mu sync.Mutex
	see := func(r breakertest.Request) {
		_, ok := r.Declaration("lookup_customer")
		mu.Lock()
		offered = append(offered, ok)
		mu.Unlock()
	}
	n := 0
	turn := w.turn(t, func(r breakertest.Request) breakertest.Step {
		see(r)
		n++
		switch n {
		case 1, 2: // the first call fails and opens the breaker; the second is made anyway
			return breakertest.Call("lookup_customer", args)
		case 3: // the model does something else while the cooldown passes
			w.clk.Advance(cooldown)
			return breakertest.Call("take_note", map[string]any{"text": "crm down"})
		case 4: // offered again: the probe
			return breakertest.Call("lookup_customer", args)
		}
		return breakertest.Text("done")
	})

	rs := responses(turn)
	require.Len(t, rs, 4)
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, payloads.TypeUnavailable, rs[1][payloads.KeyResponseType], "a hidden tool called anyway goes through its breaker")
	require.Equal(t, map[string]any{"ok": true}, rs[2])
	require.Equal(t, map[string]any{"status": "ok", "name": "Ada"}, rs[3], "the probe")
	mu.Lock()
	require.Equal(t, []bool{true, false, false, true, true}, offered, "hidden while refusing, offered again after the cooldown")
	mu.Unlock()
	require.Equal(t, 2, srv.count("/customers"))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("crm"))
	w.requireQueueEmpty(t)
	require.NotEmpty(t, w.eventsOf(callbacks.EventToolsHidden))
	require.Len(t, w.intents(t, "lookup_customer"), 2)
	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}
