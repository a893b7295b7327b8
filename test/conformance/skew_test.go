package conformance_test

import (
	"context"
	"net/http"
	"sync"
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

// Case 9a: clock skew around the cooldown.
//
// Expected per "How the breaker decides" ("Clock jumping back ...: every deadline is
// clamped to its full span from the first reading that sees the jump — a reopen time to
// the open period that was set ... (after a 5-minute jump back, RetryAfter says 30 s
// and Allow admits 30 s later)") and the open-state rule ("the first Allow at or after
// the reopen time → half_open"): after a jump back the model is told 30 s and no probe
// goes earlier than 30 s after the jump; after a jump forward past the reopen time the
// next call is the one probe.
func TestCase9ClockSkewAroundTheCooldown(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n%2 == 1 { // 1 and 3 fail, the probes (2 and 4) succeed
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1}}},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "lookup_customer", http.MethodGet, srv.URL+"/customers", clientOpts{})}
		},
	})
	b := w.breaker(t, "crm")
	lookup := func() map[string]any {
		rs := responses(w.turn(t, callOnce("lookup_customer", map[string]any{"id": 7})))
		require.Len(t, rs, 1)
		return rs[0]
	}

	require.Equal(t, payloads.TypeFailed, lookup()[payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State())
	openedAt := w.clk.Now()

	// 10 s into the cooldown the clock jumps back 5 minutes.
	w.clk.Advance(10 * time.Second)
	w.clk.Advance(-5 * time.Minute)
	jumpedAt := w.clk.Now()
	r := lookup()
	require.Equal(t, payloads.TypeUnavailable, r[payloads.KeyResponseType])
	require.Equal(t, cooldown.Seconds(), r[payloads.KeyRetryAfterSeconds], "clamped to the full open period")
	require.Equal(t, cooldown, b.RetryAfter())

	// No early probe: one second before the clamped reopen time, still refused.
	w.clk.Set(jumpedAt.Add(cooldown - time.Second))
	r = lookup()
	require.Equal(t, payloads.TypeUnavailable, r[payloads.KeyResponseType])
	require.Equal(t, 1.0, r[payloads.KeyRetryAfterSeconds])
	require.Equal(t, 1, srv.count("/customers"), "no request while the clamped cooldown runs")
	require.Equal(t, breaker.Open, b.State())

	// At the clamped reopen time the next call is the probe.
	w.clk.Set(jumpedAt.Add(cooldown))
	require.Equal(t, map[string]any{"status": "ok"}, lookup())
	require.Equal(t, 2, srv.count("/customers"))
	require.Equal(t, breaker.Closed, b.State())
	require.True(t, jumpedAt.Add(cooldown).Before(openedAt), "the probe went at a clock reading before the original open time")

	// It fails again; the clock jumps an hour forward, past the reopen time: the next
	// call is the one probe.
	require.Equal(t, payloads.TypeFailed, lookup()[payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State())
	w.clk.Advance(time.Hour)
	require.Equal(t, map[string]any{"status": "ok"}, lookup())
	require.Equal(t, 4, srv.count("/customers"))
	require.Equal(t, breaker.Closed, b.State())

	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("crm"))
	w.requireQueueEmpty(t)

	// Audit: four attempts journaled, two short-circuits recorded while open.
	in := w.intents(t, "lookup_customer")
	require.Len(t, in, 4)
	var states []journal.State
	for _, x := range in {
		states = append(states, x.State)
	}
	require.ElementsMatch(t, []journal.State{journal.StateFailed, journal.StateSucceeded, journal.StateFailed, journal.StateSucceeded}, states)
	require.Equal(t, []any{"open", "open"}, field(w.records(t, "short_circuit", "lookup_customer"), "breaker_state"))
	require.Len(t, w.records(t, "call_outcome", "lookup_customer"), 4)

	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}

// Case 9b: clock skew around the queue expiry.
//
// Expected per the admission and journal docs ("A queued step expires MaxWait after it
// was queued"; ExpireQueued marks items "whose expiry is at or before now as expired";
// "Items whose expiry passed are dropped and reported through Config.OnEvent, never
// silently"; work is queued "unless the expiry comes before the dependency can even be
// tried again"): a charge queued at T with a 10-minute wait expires at T+10m exactly:
// a clock jumping back an hour does not expire it, nor does a sweep 1 ns before T+10m;
// the sweep at T+10m does, and reports it. After the dependency recovers nothing is
// replayed. A call whose wait (10 s) ends before the breaker's reopen time (30 s) is
// not queued at all.
func TestCase9ClockSkewAroundTheQueueExpiry(t *testing.T) {
	t.Parallel()
	var srv *server
	srv = newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" && srv.count("/balance") == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "express_charge", "lookup_balance"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1},
		}},
		mutating: []string{"charge", "express_charge"},
		queueTools: map[string]callbacks.QueueTool{
			"charge":         {MaxWait: 10 * time.Minute, Priority: admission.PriorityHigh},
			"express_charge": {MaxWait: 10 * time.Second, Priority: admission.PriorityHigh},
		},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "express_charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	ctx := context.Background()
	args := map[string]any{"amount": 42, "to": "acct-7"}

	require.Equal(t, payloads.TypeFailed, responses(w.turn(t, callOnce("lookup_balance", nil)))[0][payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State())

	queuedAt := w.clk.Now()
	rs := responses(w.turn(t, steps(call("charge", args), call("express_charge", args))))
	require.Len(t, rs, 2)
	require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType])
	require.Equal(t, queuedAt.Add(10*time.Minute).Format(time.RFC3339), rs[0][callbacks.KeyQueuedUntil])
	require.Equal(t, payloads.TypeUnavailable, rs[1][payloads.KeyResponseType], "it would expire before the dependency can be tried")
	require.Contains(t, w.logs.text(), `"reason":"expires_before_recovery"`)
	items := w.queued(t)
	require.Len(t, items, 1)
	expiresAt := queuedAt.Add(10 * time.Minute)
	require.Equal(t, expiresAt, items[0].ExpiresAt.UTC())
	require.Equal(t, "charge", items[0].Tool)

	sweep := func() []journal.QueueItem {
		t.Helper()
		expired, err := w.queue.Sweep(ctx)
		require.NoError(t, err)
		return expired
	}
	// The clock jumps back an hour: nothing expires.
	w.clk.Advance(-time.Hour)
	require.Empty(t, sweep())
	// 1 ns before the expiry, after jumping forward again: still waiting.
	w.clk.Set(expiresAt.Add(-time.Nanosecond))
	require.Empty(t, sweep())
	require.Equal(t, journal.QueueWaiting, w.queued(t)[0].State)
	require.Empty(t, w.eventsOfQueue(admission.EventExpired))
	// At the expiry: dropped and reported.
	w.clk.Set(expiresAt)
	expired := sweep()
	require.Len(t, expired, 1)
	require.Equal(t, items[0].ID, expired[0].ID)
	require.Equal(t, journal.QueueExpired, w.queued(t)[0].State)
	ev := w.eventsOfQueue(admission.EventExpired)
	require.Len(t, ev, 1)
	require.Equal(t, items[0].ID, ev[0].Item.ID)
	require.NotEmpty(t, ev[0].Reason)

	// The dependency recovers (the breaker's cooldown passed long ago): the probe
	// closes it, and a drain replays nothing.
	require.Equal(t, map[string]any{"status": "ok"}, responses(w.turn(t, callOnce("lookup_balance", nil)))[0])
	require.Equal(t, breaker.Closed, b.State())
	rep, err := w.queue.Drain(ctx, "payments")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{}, rep)
	require.Zero(t, srv.count("/charge"), "the expired charge never ran")
	require.Empty(t, w.intents(t, "charge"))
	require.Empty(t, w.intents(t, "express_charge"))

	var kinds []admission.EventKind
	for _, e := range w.queueEvents.list() {
		kinds = append(kinds, e.Kind)
	}
	require.Equal(t, []admission.EventKind{admission.EventQueued, admission.EventExpired}, kinds)
	var queueRecs []any
	for _, r := range w.logs.records(t) {
		if r["msg"] == "agentbreaker admission" {
			queueRecs = append(queueRecs, r["event"])
		}
	}
	require.Equal(t, []any{"queued", "expired"}, queueRecs)

	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
	w.requireClean(t)
}

// eventsOfQueue returns the admission events of kind k.
func (w *world) eventsOfQueue(k admission.EventKind) []admission.Event {
	var out []admission.Event
	for _, e := range w.queueEvents.list() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Case 9c: clock skew around the half-open probe's lease.
//
// Expected per "How the breaker decides" ("Clock jumping back ...: every deadline is
// clamped to its full span from the first reading that sees the jump — ... a lease to
// ProbeLease"; "Retry-after ... half-open with every place taken: until the earliest
// live lease ends"; "A lease runs from the probe's admission for ProbeLease; at its end
// the place is free again, the probe counts as expired, and its report, if it ever
// comes, is dropped"): while the probe hangs at the server, a clock jump back makes
// the others wait a full 30 s lease from the jump, no second probe goes before it
// ends, the next call after it is the new probe, and the hung probe's late answer
// changes nothing.
func TestCase9ClockSkewAroundTheProbeLease(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case 2: // the first probe hangs
			close(arrived)
			<-release
			w.WriteHeader(http.StatusServiceUnavailable) // a late failure: must be dropped
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	cooldown, lease := 30*time.Second, breaker.DefaultProbeLease
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1}}},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "lookup_customer", http.MethodGet, srv.URL+"/customers", clientOpts{})}
		},
	})
	b := w.breaker(t, "crm")
	h := w.workers[0]
	w.setScript(callOnce("lookup_customer", map[string]any{"id": 7}))
	run := func() map[string]any { // a turn on a session of its own
		t.Helper()
		sid, err := h.NewSession(context.Background())
		require.NoError(t, err)
		turn, err := h.Run(context.Background(), sid, "go")
		require.NoError(t, err)
		require.Empty(t, turn.Errs)
		rs := responses(turn)
		require.Len(t, rs, 1)
		return rs[0]
	}
	require.Equal(t, payloads.TypeFailed, run()[payloads.KeyResponseType])

	// The cooldown ends; the probe goes and hangs.
	w.clk.Advance(cooldown)
	probeDone := make(chan map[string]any, 1)
	go func() {
		sid, err := h.NewSession(context.Background())
		if err != nil {
			probeDone <- map[string]any{"error": err.Error()}
			return
		}
		turn, err := h.Run(context.Background(), sid, "go")
		if err != nil {
			probeDone <- map[string]any{"error": err.Error()}
			return
		}
		rs := responses(turn)
		if len(rs) != 1 {
			probeDone <- map[string]any{"error": "no single response"}
			return
		}
		probeDone <- rs[0]
	}()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second): // real I/O bound
		t.Fatal("the probe never reached the server")
	}
	require.Equal(t, breaker.HalfOpen, b.State())

	// 10 s into the lease the clock jumps back 10 minutes.
	w.clk.Advance(10 * time.Second)
	w.clk.Advance(-10 * time.Minute)
	jumpedAt := w.clk.Now()
	r := run()
	require.Equal(t, payloads.TypeUnavailable, r[payloads.KeyResponseType])
	require.Equal(t, lease.Seconds(), r[payloads.KeyRetryAfterSeconds], "the lease clamped to its full span from the jump")
	w.clk.Set(jumpedAt.Add(lease - time.Second))
	r = run()
	require.Equal(t, payloads.TypeUnavailable, r[payloads.KeyResponseType])
	require.Equal(t, 1.0, r[payloads.KeyRetryAfterSeconds])
	require.Equal(t, 2, srv.count("/customers"), "no second probe while the lease runs")

	// The lease ends: the next call is the new probe, and it closes the breaker.
	w.clk.Set(jumpedAt.Add(lease))
	require.Equal(t, map[string]any{"status": "ok"}, run())
	require.Equal(t, 3, srv.count("/customers"))
	require.Equal(t, breaker.Closed, b.State())

	// The hung probe's late failure is dropped.
	unblock()
	var late map[string]any
	select {
	case late = <-probeDone:
	case <-time.After(20 * time.Second): // real I/O bound
		t.Fatal("the hung probe's turn never ended")
	}
	require.Equal(t, payloads.TypeFailed, late[payloads.KeyResponseType], "its caller still gets an answer")
	require.Equal(t, breaker.Closed, b.State(), "the late report was dropped")
	snap := b.Snapshot()
	require.Equal(t, int64(1), snap.ExpiredProbes)
	require.Equal(t, breaker.Counts{}, snap.Window)
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("crm"))
	w.requireQueueEmpty(t)
	require.Len(t, w.intents(t, "lookup_customer"), 3)
	require.Equal(t, []any{"half_open", "half_open"}, field(w.records(t, "short_circuit", "lookup_customer"), "breaker_state"))
	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}

// Case 9d: clock skew around a stated delay (Retry-After) that holds the dependency.
//
// A 429 with Retry-After: 30 holds the dependency (README: "A delay the dependency
// states (Retry-After, ...) is a floor on the cooldown ... It also holds against the
// model while the breaker is still closed"). 10 s later the clock jumps back 5
// minutes. Expected per "How the breaker decides" ("Clock jumping back ...: every
// deadline is clamped to its full span from the first reading that sees the jump — ...
// a stated delay to the delay stated — so RetryAfter and Allow agree"), applied to the
// same stated delay where the plugin keeps it: the held call is told at most 30 s, and
// 30 s after the jump the call reaches the server. (The clamp rule is written in the
// breaker's section; the plugin's hold does not follow it: see docs/conformance.md,
// Findings.)
func TestCase9ClockSkewAroundAStatedDelay(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"mail": {Tools: []string{"send_email"}}},
		policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "send_email", http.MethodPost, srv.URL+"/send", clientOpts{})}
		},
	})
	var jumpedAt time.Time
	turn := w.turn(t, steps(call("send_email", map[string]any{"n": 1}), func() breakertest.Step {
		w.clk.Advance(10 * time.Second)
		w.clk.Advance(-5 * time.Minute)
		jumpedAt = w.clk.Now()
		return breakertest.Call("send_email", map[string]any{"n": 2})
	}, func() breakertest.Step {
		w.clk.Set(jumpedAt.Add(30 * time.Second))
		return breakertest.Call("send_email", map[string]any{"n": 3})
	}))
	rs := responses(turn)
	require.Len(t, rs, 3)
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, 30.0, rs[0][payloads.KeyRetryAfterSeconds])
	require.Equal(t, payloads.TypeUnavailable, rs[1][payloads.KeyResponseType])
	require.Equal(t, breaker.Closed, w.breaker(t, "mail").State())
	w.requireQueueEmpty(t)
	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
	require.LessOrEqual(t, rs[1][payloads.KeyRetryAfterSeconds], 30.0,
		"finding: after a 5-minute jump back the hold of a 30 s Retry-After says %v s (not clamped to the delay stated)", rs[1][payloads.KeyRetryAfterSeconds])
	require.Equal(t, map[string]any{"status": "ok"}, rs[2], "finding: 30 s after the jump the dependency is still held")
	require.Equal(t, 2, srv.count("/send"))
}

// Case 9e: the queue expiry's boundary when the dependency recovers at that instant.
//
// Expected per the journal and admission docs (ExpireQueued: "whose expiry is at or
// before now"; ClaimQueued takes the next item "that has not expired by now"; Drain:
// "Expired items are dropped and reported first"): a charge queued at T with a
// 10-minute wait, whose dependency recovers at exactly T+10m, is expired by the drain
// at T+10m, not replayed; one queued a second later (expiring at T+10m+1s) is replayed.
func TestCase9QueueExpiryBoundaryAtRecovery(t *testing.T) {
	t.Parallel()
	var srv *server
	srv = newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" && srv.count("/balance") == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "lookup_balance"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1},
		}},
		mutating:   []string{"charge"},
		queueTools: map[string]callbacks.QueueTool{"charge": {MaxWait: 10 * time.Minute, Priority: admission.PriorityHigh}},
		replay:     replayTo(t, srv.URL+"/charge"),
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	responses(w.turn(t, callOnce("lookup_balance", nil)))
	require.Equal(t, breaker.Open, b.State())
	queuedAt := w.clk.Now()
	for i, amount := range []int{1, 2} {
		rs := responses(w.turn(t, callOnce("charge", map[string]any{"amount": amount})))
		require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType], "charge %d", i)
		w.clk.Advance(time.Second)
	}

	// The dependency recovers at exactly the first item's expiry.
	w.clk.Set(queuedAt.Add(10 * time.Minute))
	require.Equal(t, map[string]any{"status": "ok"}, responses(w.turn(t, callOnce("lookup_balance", nil)))[0])
	require.Equal(t, breaker.Closed, b.State())
	rep, err := w.queue.Drain(context.Background(), "payments")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{Replayed: 1, Expired: 1}, rep)
	charges := srv.requests("/charge")
	require.Len(t, charges, 1)
	require.JSONEq(t, `{"amount": 2}`, charges[0].Body, "the item that had not expired")
	states := map[string]journal.QueueState{}
	for _, it := range w.queued(t) {
		states[string(it.Payload)] = it.State
	}
	require.Equal(t, map[string]journal.QueueState{`{"amount":1}`: journal.QueueExpired, `{"amount":2}`: journal.QueueReplayed}, states)
	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge"})
	w.requireClean(t)
}
