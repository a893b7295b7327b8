package callbacks_test

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
)

// concurrentSessions is how many sessions run turns at once through one runner in the
// concurrency measurements: a busy agent server's worth, far more than GOMAXPROCS.
const concurrentSessions = 256

// sessionsHarness is one runner whose model answers each session's first request with
// one tool call and the next with text, whatever the other sessions are doing, with
// agentbreaker's plugin (and a bulkhead wide enough never to refuse) or without it.
func sessionsHarness(tb testing.TB, with bool) *breakertest.Harness {
	tb.Helper()
	m := breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: true, Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Calls(&genai.FunctionCall{Name: "lookup", Args: map[string]any{"i": 1}})
	}})
	return guardedHarness(tb, m, with, 2*concurrentSessions)
}

// runSessions runs turns turns spread over concurrentSessions goroutines, each on its
// own session (a fresh one every 4 turns, as in the serial benchmarks), and returns how
// long they took.
func runSessions(tb testing.TB, h *breakertest.Harness, turns int) time.Duration {
	tb.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrentSessions {
		wg.Go(func() {
			var sid string
			// A session is deleted when it is done, so that the store, and the heap the
			// collector walks, stay the same size however many rounds run.
			done := func() {
				if sid == "" {
					return
				}
				if err := h.Sessions.Delete(ctx, &session.DeleteRequest{AppName: "breakertest", UserID: "user", SessionID: sid}); err != nil {
					failed.Store(&err)
				}
			}
			defer done()
			for n := 0; next.Add(1) <= int64(turns); n++ {
				if n%4 == 0 {
					done()
					var err error
					if sid, err = h.NewSession(ctx); err != nil {
						failed.Store(&err)
						return
					}
				}
				if _, err := h.Run(ctx, sid, "go"); err != nil {
					failed.Store(&err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := failed.Load(); err != nil {
		tb.Fatal(*err)
	}
	return took
}

// BenchmarkConcurrentSessionsPaired measures what the plugin costs a runner serving
// many sessions at once (issue 27e): rounds of 4×256 turns, each turn one tool call,
// alternate between a runner with the plugin and one without, so the machine's drift
// falls on both alike. It reports throughput-ratio = turns/s with ÷ turns/s without
// (goal: at least 0.98), and both rates. Run it at the core count you serve with, for
// at least 50 rounds:
//
//	go test -run '^$' -bench ConcurrentSessionsPaired -cpu 2 -benchtime 50x -count 6 ./callbacks/
//
// As in BenchmarkToolCallOverheadPaired, the garbage collector runs between rounds,
// untimed, not during them: a collection of 256 sessions' garbage landing in one round
// moved single rounds by ±10%, far more than the difference being measured. The
// plugin's share of the collector's work follows its share of the bytes
// (ToolCallOverhead's B/op).
func BenchmarkConcurrentSessionsPaired(b *testing.B) {
	arms := [2]*breakertest.Harness{sessionsHarness(b, false), sessionsHarness(b, true)}
	const round = 4 * concurrentSessions
	for _, h := range arms { // warm both
		runSessions(b, h, concurrentSessions)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var took [2]time.Duration
	rounds := 0
	for b.Loop() {
		first := rounds & 1
		runtime.GC()
		took[first] += runSessions(b, arms[first], round)
		runtime.GC()
		took[1-first] += runSessions(b, arms[1-first], round)
		rounds++
	}
	turns := float64(rounds * round)
	without, with := turns/took[0].Seconds(), turns/took[1].Seconds()
	b.ReportMetric(with/without, "throughput-ratio")
	b.ReportMetric(without, "turns/s-without")
	b.ReportMetric(with, "turns/s-with")
}

// pluginPackages are the packages whose frames are the plugin's own. breakertest (the
// harness) and the test's frames are not.
var pluginPackages = []string{
	"agentbreaker/callbacks.", "agentbreaker/breaker.", "agentbreaker/dependencymap.", "agentbreaker/bulkhead.",
	"agentbreaker/loopguard.", "agentbreaker/payloads.", "agentbreaker/classify.", "agentbreaker/clock.",
	"agentbreaker/docstrings.", "agentbreaker/redact.",
}

// backgroundTicker is the frame of the coarse clock's ticker goroutine, which blocks on
// its time.Ticker between readings by design, off every call's path.
const backgroundTicker = "agentbreaker/clock.(*coarse).tick"

// pluginFrame reports whether a line of a profile is a frame of the plugin's code.
func pluginFrame(line string) bool {
	if strings.Contains(line, "_test.go") {
		return false
	}
	for _, p := range pluginPackages {
		if strings.Contains(line, p) {
			return true
		}
	}
	return false
}

// TestConcurrentSessionsDoNotContendInThePlugin holds the other half of issue 27e: with
// 256 sessions running turns at once through one runner, no frame of the plugin's
// packages appears in the mutex profile (a lock the plugin takes was contended) or the
// block profile (a goroutine waited in the plugin). It counts frames, not time.
func TestConcurrentSessionsDoNotContendInThePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2,048 turns with profiling on")
	}
	h := sessionsHarness(t, true)
	runSessions(t, h, concurrentSessions) // warm: the first calls build caches under a lock, by design
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	runSessions(t, h, 8*concurrentSessions)
	for _, name := range []string{"mutex", "block"} {
		var buf bytes.Buffer
		if err := pprof.Lookup(name).WriteTo(&buf, 1); err != nil {
			t.Fatal(err)
		}
		var hits []string
		for _, record := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(record, backgroundTicker) {
				continue // the coarse clock's own goroutine waiting for its next tick: no call waits there
			}
			if strings.Contains(record, "runtime.mallocgc") {
				continue // the allocator's own lock, reached from an allocation: not a lock of the plugin's
			}
			for _, line := range strings.Split(record, "\n") {
				if pluginFrame(line) {
					hits = append(hits, record)
					break
				}
			}
		}
		if len(hits) > 0 {
			t.Errorf("the %s profile has %d records in the plugin's code, first:\n%s", name, len(hits), hits[0])
			continue
		}
		t.Logf("%s profile: %d bytes, no record in the plugin's code", name, buf.Len())
	}
}
