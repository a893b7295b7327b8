package conformance_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// Case 7: two workers attempting the same half-open probe.
//
// Two workers (two runners, each with its own agent, sharing the plugin and the
// dependency map as the replicas of one process do) each run several turns at once,
// all released together after the cooldown. Expected per the README ("Half-open lets
// exactly one probe through (configurable), however many goroutines race for it") and
// the callbacks features ("half-open with its probe out treated as unavailable"):
// exactly one call reaches the server (which holds it until every other call has been
// answered), every other call gets the unavailable payload with the time until the
// probe's lease ends, and the probe's success closes the breaker.
//
// Two processes (fleet mode) are not covered here; see docs/conformance.md.
func TestCase7TwoWorkersRaceForTheProbe(t *testing.T) {
	t.Parallel()
	const perWorker = 4
	release := make(chan struct{})
	probeArrived := make(chan struct{})
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2: // the probe: held until the test has seen every other call answered
			close(probeArrived)
			<-release
			_, _ = w.Write([]byte(`{"status": "ok", "hits": 3}`))
		default:
			w.WriteHeader(http.StatusInternalServerError) // a second probe would fail
		}
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"search": {Tools: []string{"search"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1}}},
		workers: 2,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "search", http.MethodGet, srv.URL+"/search", clientOpts{})}
		},
	})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the server's Close, whatever failed
	b := w.breaker(t, "search")
	args := map[string]any{"q": "breakers"}

	// adk-go's runner sets up its root agent on its first Run without a lock (a data
	// race between the first concurrent runs of one runner): give each worker one
	// quiet turn first, as a process serving traffic has long done.
	for i, h := range w.workers {
		w.setScript(func(breakertest.Request) breakertest.Step { return breakertest.Text("ready") })
		turn, err := h.Run(context.Background(), w.sessions[i], "warm up")
		require.NoError(t, err)
		require.Empty(t, turn.Errs)
	}

	rs := responses(w.turn(t, callOnce("search", args)))
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, breaker.Open, b.State())

	// After the cooldown every turn of both workers starts at once.
	w.clk.Advance(cooldown)
	w.setScript(callOnce("search", args))
	type result struct {
		worker int
		turn   *breakertest.Turn
		err    error
	}
	results := make(chan result, 2*perWorker)
	go1 := make(chan struct{})
	var wg sync.WaitGroup
	for worker, h := range w.workers {
		for range perWorker {
			sid, err := h.NewSession(context.Background())
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-go1
				turn, err := h.Run(context.Background(), sid, "search")
				results <- result{worker, turn, err}
			}()
		}
	}
	close(go1)
	var answered []result
	arrived := false
	deadline := time.After(20 * time.Second) // real I/O bound, never reached when healthy
	for len(answered) < 2*perWorker-1 || !arrived {
		select {
		case r := <-results:
			answered = append(answered, r)
		case <-probeArrived:
			arrived, probeArrived = true, nil
		case <-deadline:
			unblock()
			wg.Wait()
			t.Fatalf("only %d of %d racing calls were answered while the probe was held (probe at the server: %v); the server counted %d requests",
				len(answered), 2*perWorker-1, arrived, srv.count(""))
		}
	}
	require.Equal(t, 2, srv.count("/search"), "one failure, then exactly one probe")
	require.Equal(t, breaker.HalfOpen, b.State())
	unblock()
	wg.Wait()
	answered = append(answered, <-results)

	// The model's answers: one real result, the rest unavailable until the lease ends.
	var probes, refused int
	workersRefused := map[int]int{}
	for _, r := range answered {
		require.NoError(t, r.err)
		require.Empty(t, r.turn.Errs)
		rs := responses(r.turn)
		require.Len(t, rs, 1)
		if rs[0][payloads.KeyResponseType] == nil {
			require.Equal(t, map[string]any{"status": "ok", "hits": 3.0}, rs[0])
			probes++
			continue
		}
		refused++
		workersRefused[r.worker]++
		require.Equal(t, payloads.TypeUnavailable, rs[0][payloads.KeyResponseType])
		require.Equal(t, breaker.DefaultProbeLease.Seconds(), rs[0][payloads.KeyRetryAfterSeconds],
			"half-open with every place taken: until the earliest live lease ends")
	}
	require.Equal(t, 1, probes)
	require.Equal(t, 2*perWorker-1, refused)
	require.Len(t, workersRefused, 2, "both workers raced and were refused")
	require.Equal(t, 2, srv.count("/search"))

	// Breaker: closed by the one probe.
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("search"))
	w.requireQueueEmpty(t)

	// Audit: two attempts journaled; the refused calls are short-circuits recorded with
	// the half-open state.
	in := w.intents(t, "search")
	require.Len(t, in, 2)
	require.Equal(t, journal.StateFailed, in[0].State)
	require.Equal(t, journal.StateSucceeded, in[1].State)
	shorts := w.eventsOf(callbacks.EventShortCircuit)
	require.Len(t, shorts, 2*perWorker-1)
	for _, e := range shorts {
		require.Equal(t, breaker.HalfOpen, e.BreakerState)
	}
	recs := w.records(t, "short_circuit", "search")
	require.Len(t, recs, 2*perWorker-1)
	for _, r := range recs {
		require.Equal(t, "half_open", r["breaker_state"])
	}
	require.Len(t, w.records(t, "call_outcome", "search"), 2)

	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}

// Case 7, when the worker holding the probe gives up: the other worker probes at once.
//
// Expected per "How the breaker decides" ("a probe reported Ignore or whose lease ran
// out gives its place back") and the callbacks docs ("the turn's cancellation is
// neutral"; a call whose run was cut short "is released when the run's state is
// freed"): worker A's probe hangs at the server and A's turn is cancelled; worker B's
// next call, without any time passing, is the probe, and closes the breaker. The server
// counts the failure, A's probe and B's probe: 3.
func TestCase7ProbeOfACancelledWorkerIsReleased(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	srv := newServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2: // A's probe hangs until A gives up
			close(arrived)
			<-r.Context().Done()
		default:
			_, _ = w.Write([]byte(`{"status": "ok", "hits": 3}`))
		}
	})
	cooldown := 30 * time.Second
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"search": {Tools: []string{"search"},
			Policy: breaker.Policy{MinimumCalls: 1, Cooldown: cooldown, Jitter: -1}}},
		workers: 2,
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "search", http.MethodGet, srv.URL+"/search", clientOpts{})}
		},
	})
	b := w.breaker(t, "search")
	args := map[string]any{"q": "breakers"}
	rs := responses(w.turn(t, callOnce("search", args)))
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	w.clk.Advance(cooldown)

	// Worker A takes the probe, then gives up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_, _ = w.workers[0].Run(ctx, w.sessions[0], "search")
	}()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second): // real I/O bound
		t.Fatal("A's probe never reached the server")
	}
	require.Equal(t, breaker.HalfOpen, b.State())
	cancel()
	select {
	case <-aDone:
	case <-time.After(20 * time.Second): // real I/O bound
		t.Fatal("A's cancelled turn never ended")
	}

	// Worker B, at the same instant: its call is the probe.
	turn, err := w.workers[1].Run(context.Background(), w.sessions[1], "search")
	require.NoError(t, err)
	rs = responses(turn)
	require.Len(t, rs, 1)
	require.Equal(t, map[string]any{"status": "ok", "hits": 3.0}, rs[0], "B probed without waiting for A's lease")
	require.Equal(t, 3, srv.count("/search"))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("search"))
	require.Zero(t, b.Snapshot().ExpiredProbes, "A's place was given back, not left to expire")
	w.requireQueueEmpty(t)
	in := w.intents(t, "search")
	require.Len(t, in, 3)
	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}
