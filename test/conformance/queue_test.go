package conformance_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// replayTo is the application's admission Replay: it sends a queued charge's
// arguments to u with the item's idempotency key.
func replayTo(t *testing.T, u string) func(ctx context.Context, it journal.QueueItem) error {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	return func(ctx context.Context, it journal.QueueItem) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(it.Payload))
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", it.IdempotencyKey)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

// waitQueueEvent waits, for at most a generous bound of real time (the admission Run
// loop replays on its own goroutine, over real HTTP), until the queue reported n
// events of kind k.
func waitQueueEvent(t *testing.T, w *world, k admission.EventKind, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := 0
		for _, e := range w.queueEvents.list() {
			if e.Kind == k {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %d %s queue events, got %d: %+v", n, k, got, w.queueEvents.list())
		}
		time.Sleep(5 * time.Millisecond) // polling real I/O, not waiting for the clock
	}
}

// Case 6: the breaker opens while a high-priority item is queued.
//
// Expected per the admission docs and the callbacks docs (Config.SideEffects.Admission,
// QueueTools): with payments' breaker open, a high-priority charge is queued durably
// with its arguments, its operation's idempotency key and an expiry, and the model is
// told "queued until HH:MM"; a low-priority call is rejected (reason low_priority) and
// gets the unavailable payload. When the half-open probe fails the breaker opens again
// (cooldown doubled: 30 s, then 1 m) and the item keeps waiting: a drain while the
// breaker is not closed replays nothing. When a probe succeeds the breaker closes,
// its transition wakes the controller's Run loop, and the item is replayed exactly
// once, with its original idempotency key: one request at the server.
func TestCase6BreakerOpensWhileHighPriorityItemQueued(t *testing.T) {
	t.Parallel()
	var srv *server
	srv = newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" && srv.count("/balance") <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "lookup_balance", "send_receipt"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1},
		}},
		mutating: []string{"charge", "send_receipt"},
		queueTools: map[string]callbacks.QueueTool{
			"charge":       {MaxWait: time.Hour, Priority: admission.PriorityHigh},
			"send_receipt": {MaxWait: time.Hour, Priority: admission.PriorityLow},
		},
		replay:   replayTo(t, srv.URL+"/charge"),
		runQueue: true,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
				w.httpTool(t, "send_receipt", http.MethodPost, srv.URL+"/receipt", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	args := map[string]any{"amount": 42, "to": "acct-7"}

	// The balance lookup fails: the breaker opens.
	rs := responses(w.turn(t, callOnce("lookup_balance", map[string]any{"account": "acct-7"})))
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State())

	// A high-priority charge is queued; a low-priority receipt is refused.
	queuedAt := w.clk.Now()
	turn := w.turn(t, steps(call("charge", args), call("send_receipt", args)))
	rs = responses(turn)
	require.Len(t, rs, 2)
	require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType])
	require.Equal(t, callbacks.StatusQueued, rs[0][payloads.KeyStatus])
	require.Equal(t, queuedAt.Add(time.Hour).Format(time.RFC3339), rs[0][callbacks.KeyQueuedUntil])
	require.Contains(t, rs[0][payloads.KeyReason], "Queued until 15:00 UTC")
	require.Equal(t, payloads.TypeUnavailable, rs[1][payloads.KeyResponseType], "low priority: not queued")
	require.Zero(t, srv.count("/charge")+srv.count("/receipt"), "neither was sent")

	items := w.queued(t)
	require.Len(t, items, 1)
	item := items[0]
	require.Equal(t, rs[0][callbacks.KeyQueueItemID], item.ID)
	require.Equal(t, journal.QueueWaiting, item.State)
	require.Equal(t, "charge", item.Tool)
	require.Equal(t, int(admission.PriorityHigh), item.Priority)
	require.Equal(t, queuedAt.Add(time.Hour), item.ExpiresAt.UTC())
	require.NotEmpty(t, item.IdempotencyKey)
	require.JSONEq(t, `{"amount": 42, "to": "acct-7"}`, string(item.Payload))

	// The probe fails: the breaker opens again with the item queued; the cooldown
	// doubled. A drain now replays nothing.
	w.clk.Advance(cooldown)
	rs = responses(w.turn(t, callOnce("lookup_balance", map[string]any{"account": "acct-7"})))
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, 2, srv.count("/balance"))
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, 2*cooldown, b.RetryAfter(), "tool cooldowns double after a failed probe")
	rep, err := w.queue.Drain(context.Background(), "payments")
	require.NoError(t, err)
	require.Zero(t, rep.Replayed)
	require.NotEmpty(t, rep.Stopped)
	require.Equal(t, journal.QueueWaiting, w.queued(t)[0].State)
	require.Zero(t, srv.count("/charge"))

	// The next probe succeeds: the breaker closes and the queue replays the charge.
	w.clk.Advance(2 * cooldown)
	rs = responses(w.turn(t, callOnce("lookup_balance", map[string]any{"account": "acct-7"})))
	require.Equal(t, map[string]any{"status": "ok"}, rs[0])
	require.Equal(t, breaker.Closed, b.State())
	waitQueueEvent(t, w, admission.EventReplayed, 1)

	// Exactly one remote attempt of the charge, with the item's original key; a
	// second drain finds nothing.
	rep, err = w.queue.Drain(context.Background(), "payments")
	require.NoError(t, err)
	require.Zero(t, rep.Replayed)
	charges := srv.requests("/charge")
	require.Len(t, charges, 1)
	require.Equal(t, item.IdempotencyKey, charges[0].Key)
	require.JSONEq(t, `{"amount": 42, "to": "acct-7"}`, charges[0].Body)
	require.Zero(t, srv.count("/receipt"))

	// Breaker and queue state.
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>open:probe_failed",
		"open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("payments"))
	items = w.queued(t)
	require.Len(t, items, 1)
	require.Equal(t, journal.QueueReplayed, items[0].State)
	n, err := w.journal.CountQueued(context.Background(), "payments")
	require.NoError(t, err)
	require.Zero(t, n)

	// Audit: the queue's events, the callbacks' events, and the log records.
	var kinds []admission.EventKind
	for _, e := range w.queueEvents.list() {
		kinds = append(kinds, e.Kind)
		require.Equal(t, item.ID, e.Item.ID)
	}
	require.Equal(t, []admission.EventKind{admission.EventQueued, admission.EventReplayed}, kinds)
	require.Len(t, w.eventsOf(callbacks.EventQueued), 1)
	shorts := w.eventsOf(callbacks.EventShortCircuit)
	require.Len(t, shorts, 1, "the refused receipt got the unavailable payload (EventShortCircuit)")
	require.Equal(t, "send_receipt", shorts[0].Tool)
	require.Empty(t, w.intents(t, "charge"), "the charge never ran through the plugin")
	var queueRecs []map[string]any
	for _, r := range w.logs.records(t) {
		if r["msg"] == "agentbreaker admission" {
			queueRecs = append(queueRecs, r)
		}
	}
	require.Equal(t, []any{"queued", "replayed"}, field(queueRecs, "event"))
	require.Equal(t, []any{item.ID, item.ID}, field(queueRecs, "item"))
	require.Equal(t, []any{30.0, 30.0}, field(queueRecs, "priority"))
	cbQueued := w.records(t, "queued", "charge")
	require.Len(t, cbQueued, 2, "the queue's record and the plugin's")
	require.Equal(t, item.ID, cbQueued[1]["queue_item_id"])
	require.Equal(t, "open", cbQueued[1]["breaker_state"])
	require.Contains(t, w.logs.text(), `"reason":"low_priority"`, "the refused receipt's reason")

	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge", "send_receipt": "/receipt"})
	w.requireClean(t)
}

// Case 6, across a restart: the item queued while the breaker was open survives the
// process, and the next process replays it once at start-up.
//
// Expected per the admission docs (Run: "The start-up drain is what replays the work a
// restart would otherwise strand: a new process's breakers start closed, so no
// transition to closed ever wakes their queues") and the journal docs ("so queued
// work survives a restart too"): one request at the server, with the item's key.
func TestCase6QueuedItemSurvivesARestart(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	path := filepath.Join(t.TempDir(), "journal.db")
	mk := func(runQueue bool) *world {
		return newWorld(t, setup{
			dependencies: map[string]dependencymap.Dependency{"payments": {
				Tools:  []string{"charge", "lookup_balance"},
				Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1},
			}},
			mutating:   []string{"charge"},
			queueTools: map[string]callbacks.QueueTool{"charge": {MaxWait: time.Hour, Priority: admission.PriorityHigh}},
			replay:     replayTo(t, srv.URL+"/charge"),
			runQueue:   runQueue,
			backend:    sqlite.Backend{Path: path},
			tools: func(w *world) []tool.Tool {
				return []tool.Tool{
					w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
					w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
				}
			},
		})
	}
	a := mk(false)
	responses(a.turn(t, callOnce("lookup_balance", nil)))
	require.Equal(t, breaker.Open, a.breaker(t, "payments").State())
	rs := responses(a.turn(t, callOnce("charge", map[string]any{"amount": 42, "to": "acct-7"})))
	require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType])
	item := a.queued(t)[0]
	a.requireClean(t)
	require.NoError(t, a.journal.Close()) // the process stops with the item queued

	b := mk(true) // the next process: its breakers start closed
	waitQueueEvent(t, b, admission.EventReplayed, 1)
	rep, err := b.queue.Drain(context.Background(), "payments")
	require.NoError(t, err)
	require.Zero(t, rep.Replayed, "replayed once only")

	charges := srv.requests("/charge")
	require.Len(t, charges, 1)
	require.Equal(t, item.IdempotencyKey, charges[0].Key)
	require.Equal(t, breaker.Closed, b.breaker(t, "payments").State())
	items := b.queued(t)
	require.Len(t, items, 1)
	require.Equal(t, journal.QueueReplayed, items[0].State)
	require.Equal(t, item.ID, items[0].ID)
	ev := b.queueEvents.list()
	require.Len(t, ev, 1)
	require.Equal(t, admission.EventReplayed, ev[0].Kind)
	requireNoUnsafeReplay(t, b, srv, map[string]string{"charge": "/charge"})
	b.requireClean(t)
}

// Case 6, replay order and rate: several items wait when the breaker closes.
//
// Expected per the admission docs ("the dependency's queue is replayed in priority
// order, older first, at most Config.ReplayRate items per second"): a normal-priority
// refund queued first, a high-priority charge, then a second refund are replayed as
// charge, first refund, second refund, each once with its own key, and three replays at
// the default rate of 1 per second take at least 2 s of waits.
func TestCase6ReplayOrderAndRate(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/balance" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	})
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	replay := func(ctx context.Context, it journal.QueueItem) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/"+it.Tool, bytes.NewReader(it.Payload))
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", it.IdempotencyKey)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"payments": {
			Tools:  []string{"charge", "refund", "lookup_balance"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1},
		}},
		mutating: []string{"charge", "refund"},
		queueTools: map[string]callbacks.QueueTool{
			"charge": {MaxWait: time.Hour, Priority: admission.PriorityHigh},
			"refund": {MaxWait: time.Hour, Priority: admission.PriorityNormal},
		},
		replay:   replay,
		runQueue: true,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "charge", http.MethodPost, srv.URL+"/charge", clientOpts{}),
				w.httpTool(t, "refund", http.MethodPost, srv.URL+"/refund", clientOpts{}),
				w.httpTool(t, "lookup_balance", http.MethodGet, srv.URL+"/balance", clientOpts{}),
			}
		},
	})
	b := w.breaker(t, "payments")
	responses(w.turn(t, callOnce("lookup_balance", nil)))
	require.Equal(t, breaker.Open, b.State())
	for i, c := range []struct {
		tool string
		args map[string]any
	}{
		{"refund", map[string]any{"order": "o-1"}},
		{"charge", map[string]any{"order": "o-2"}},
		{"refund", map[string]any{"order": "o-3"}},
	} {
		rs := responses(w.turn(t, callOnce(c.tool, c.args)))
		require.Equal(t, callbacks.TypeQueued, rs[0][payloads.KeyResponseType], "call %d", i)
		w.clk.Advance(time.Second)
	}
	require.Len(t, w.queued(t), 3)

	// Recovery: a probe closes the breaker (sent through the breaker's own two-step API
	// here; case 6a sends it through the runner); the Run loop drains the queue.
	w.clk.Advance(30 * time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	require.True(t, p.IsProbe())
	p.Success()
	require.Equal(t, breaker.Closed, b.State())
	waitQueueEvent(t, w, admission.EventReplayed, 3)

	var order []string
	for _, r := range srv.requests("") {
		if r.Path != "/balance" {
			order = append(order, r.Path+" "+r.Body)
		}
	}
	require.Equal(t, []string{`/charge {"order":"o-2"}`, `/refund {"order":"o-1"}`, `/refund {"order":"o-3"}`}, order,
		"priority first, then older first")
	keys := map[string]bool{}
	for _, it := range w.queued(t) {
		require.Equal(t, journal.QueueReplayed, it.State)
		keys[it.IdempotencyKey] = true
	}
	require.Len(t, keys, 3, "each item its own key")
	var waited time.Duration
	for _, d := range w.queueSleep.Slept() {
		waited += d
	}
	require.GreaterOrEqual(t, waited, 2*time.Second, "at most 1 replay per second: %v", w.queueSleep.Slept())
	requireNoUnsafeReplay(t, w, srv, map[string]string{"charge": "/charge", "refund": "/refund"})
	w.requireClean(t)
}
