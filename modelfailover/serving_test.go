package modelfailover_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// Issue 13a: calls sent to the fallback while the primary's probe is out finish
// after the probe closed the primary's breaker. The serving route follows the
// breakers, so they must not move it back to the fallback, nor announce anything.
func TestFallbacksFinishingAfterTheProbeDoNotMoveServingBack(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}})
	ctx := t.Context()
	openA(t, h, a)
	require.Len(t, h.events.failovers(), 1, "A's breaker opened: one announcement")

	probeGate := geminifake.NewGate(0)
	require.NoError(t, a.server.Enqueue(geminifake.Reply{Text: "answer from us-central1", Gate: probeGate}))
	lateGate := geminifake.NewGate(0)
	const late = 3
	for range late {
		require.NoError(t, b.server.Enqueue(geminifake.Reply{Text: "late answer from europe-west1", Gate: lateGate}))
	}
	probeDone := make(chan result, 1)
	go func() { probeDone <- h.turn(ctx, newSession(), false) }()
	<-probeGate.Arrived() // the probe is out: A is half-open and busy
	lateDone := make(chan result, late)
	for range late {
		go func() { lateDone <- h.turn(ctx, newSession(), false) }()
	}
	for range late {
		<-lateGate.Arrived() // each is held at B
	}

	probeGate.Release()
	res := testwait.Recv(t, probeDone, "the turn's result")
	require.NoError(t, res.err)
	assert.Equal(t, []string{"answer from us-central1"}, res.finals)
	require.Equal(t, breaker.Closed, h.breaker(a).State())
	require.Len(t, h.events.failovers(), 2)
	assert.Equal(t, modelfailover.CauseProbeSucceeded, h.events.failovers()[1].Cause)

	lateGate.Release()
	for range late {
		res := testwait.Recv(t, lateDone, "the turn's result")
		require.NoError(t, res.err)
		assert.Equal(t, []string{"late answer from europe-west1"}, res.finals)
		assert.Equal(t, routeB, res.last.CustomMetadata[modelfailover.MetaRoute])
	}
	assert.Len(t, h.events.failovers(), 2, "late fallback answers are not a failover")
	assert.Len(t, h.logs.records(t, "WARN"), 2)
	assert.Equal(t, routeA, h.f.Stats().Serving.Name)

	res = h.turn(ctx, newSession(), false)
	require.NoError(t, res.err)
	assert.Equal(t, routeA, res.last.CustomMetadata[modelfailover.MetaRoute])
	assert.Len(t, h.events.failovers(), 2, "no \"recovered\" change on the next call")
	assert.Equal(t, []modelfailover.FailoverCount{
		{From: routeB, To: routeA, Count: 1}, {From: routeA, To: routeB, Count: 1},
	}, h.f.Stats().Failovers)
}

// Issue 13b: with the default model policy and one primary call in three failing,
// the primary's breaker stays closed. Every third call is served by the fallback:
// counted (Call.FallbackFrom, the fallback share) and never announced.
func TestFlakyPrimaryIsCountedNotAnnounced(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streaming"}[streaming], func(t *testing.T) {
			a, b := twoRegions(t)
			h := newHarness(t, harnessConfig{regions: []*region{a, b}, defaultPolicy: true})
			for i := range 30 {
				if i%3 == 2 {
					require.NoError(t, a.server.Enqueue(geminifake.Reply{Fail: &geminifake.Failure{Code: 503}}))
				}
				res := h.turn(t.Context(), newSession(), streaming)
				require.NoError(t, res.err)
				h.clock.Advance(10 * time.Second)
			}
			assert.Equal(t, []int{30, 10}, h.counts())
			assert.Equal(t, breaker.Closed, h.breaker(a).State())
			assert.Empty(t, h.events.failovers(), "no hook call")
			assert.Empty(t, h.events.observedList(), "no Observer failover")
			assert.Empty(t, h.logs.records(t, "WARN"), "no warning")
			st := h.f.Stats()
			assert.Empty(t, st.Failovers)
			assert.Equal(t, routeA, st.Serving.Name)
			assert.Equal(t, uint64(30), st.Window.Calls)
			assert.Equal(t, uint64(10), st.Window.Fallback)
			assert.InDelta(t, 1.0/3, st.Window.FallbackShare, 1e-9)
			fallbacks := 0
			for _, c := range h.events.callList() {
				if c.ServedBy == modelfailover.ServedFallback {
					fallbacks++
					assert.Equal(t, routeA, c.FallbackFrom.Name)
					assert.Equal(t, modelfailover.Cause("http_5xx"), c.FallbackCause)
					assert.Equal(t, routeB, c.Route.Name)
				}
			}
			assert.Equal(t, 10, fallbacks)
		})
	}
}

// Issue 13g: two changes that race are announced in the order they happened, to
// the hook and to the Observer alike, even when the first one's hook is slow. The
// second call does not wait for the first's hook.
func TestAnnouncementsKeepTheirOrder(t *testing.T) {
	a, b := twoRegions(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var hooked []string
	h := newHarness(t, harnessConfig{regions: []*region{a, b}, mutate: func(c *modelfailover.Config) {
		c.OnFailover = func(e modelfailover.Event) {
			mu.Lock()
			hooked = append(hooked, e.From.Name+" > "+e.To.Name)
			n := len(hooked)
			mu.Unlock()
			if n == 1 {
				close(entered)
				<-release // a slow hook on the first change
			}
		}
	}})
	ctx := t.Context()
	hookedNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hooked...)
	}

	a.fail(t, geminifake.Failure{Code: 503})
	require.NoError(t, h.turn(ctx, newSession(), false).err) // one failure: a per-call fallback
	first := make(chan result, 1)
	go func() { first <- h.turn(ctx, newSession(), false) }() // the second failure opens A
	testwait.Recv(t, entered, "the call to enter the model")

	// While the first hook runs, A recovers and its probe closes the breaker.
	a.server.Recover()
	h.clock.Advance(30 * time.Second)
	res := h.turn(ctx, newSession(), false)
	require.NoError(t, res.err, "the second change does not wait for the first hook")
	assert.Equal(t, []string{"answer from us-central1"}, res.finals)
	assert.Equal(t, []string{routeA + " > " + routeB}, hookedNow(), "the second change waits its turn")
	assert.Empty(t, h.events.observedList())

	close(release)
	// The first call delivers the queued change before it returns.
	require.NoError(t, (<-first).err)
	want := []string{routeA + " > " + routeB, routeB + " > " + routeA}
	assert.Equal(t, want, hookedNow())
	var observed, warned []string
	for _, e := range h.events.observedList() {
		observed = append(observed, e.From.Name+" > "+e.To.Name)
	}
	for _, w := range h.logs.records(t, "WARN") {
		warned = append(warned, w["from"].(string)+" > "+w["to"].(string))
	}
	assert.Equal(t, want, observed)
	assert.Equal(t, want, warned)
}
