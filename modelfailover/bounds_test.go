package modelfailover_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// boundsHarness runs the failover model with the three time bounds on the fake
// timer clock; any bound left zero is off.
func boundsHarness(t *testing.T, first, gap, whole time.Duration) (*harness, *region, *region) {
	return boundsHarnessFor(t, false, first, gap, whole)
}

// boundsHarnessFor is boundsHarness, optionally with the agent keeping region A's
// model and using the callbacks (the transport then enforces the bounds).
func boundsHarnessFor(t *testing.T, callbacks bool, first, gap, whole time.Duration) (*harness, *region, *region) {
	a, b := twoRegions(t)
	hc := harnessConfig{regions: []*region{a, b}, mutate: func(c *modelfailover.Config) {
		c.AttemptTimeout, c.ChunkTimeout, c.CallTimeout = first, gap, whole
	}}
	if callbacks {
		// The transport enforces the first-response and gap bounds on the agent's own
		// model only for requests the Failover tagged: its client uses f.Transport.
		hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
		hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
	}
	return newHarness(t, hc), a, b
}

// stepChunks lets n chunks of a gated stream out, advancing the clock by every
// before each, and returns the partial texts the caller saw. After each chunk it
// waits until the attempt is waiting again (its gap timer armed, when armed > 0).
func stepChunks(t *testing.T, h *harness, gate *geminifake.Gate, items <-chan streamed, n int, every time.Duration, armed int) []string {
	t.Helper()
	var texts []string
	for range n {
		h.clock.Advance(every)
		require.NoError(t, gate.Step(t.Context()))
		it := testwait.Recv(t, items, "the next stream item")
		require.NoError(t, it.err)
		require.True(t, it.partial)
		texts = append(texts, it.text)
		h.clock.waitArmed(armed)
	}
	return texts
}

// Issue 13d: a healthy stream sending a chunk every 200ms runs a whole second,
// twice AttemptTimeout (500ms): it is not cut, and it counts as the route's
// success. AttemptTimeout bounds the first chunk, ChunkTimeout (300ms) each gap.
func TestHealthyStreamIsNotCutByAttemptTimeout(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			healthyStream(t, callbacks)
		})
	}
}

func healthyStream(t *testing.T, callbacks bool) {
	h, a, b := boundsHarnessFor(t, callbacks, 500*time.Millisecond, 300*time.Millisecond, 0)
	gate := geminifake.NewGate(0)
	require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"one ", "two ", "three ", "four ", "five"}, Gate: gate}))
	items := streamTurn(h, "count")
	testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
	h.clock.waitArmed(1) // the first-response timer
	texts := stepChunks(t, h, gate, items, 4, 200*time.Millisecond, 1)
	// The fifth chunk ends the stream: the final response follows it at once, so
	// there is no gap timer to wait for.
	h.clock.Advance(200 * time.Millisecond)
	require.NoError(t, gate.Step(t.Context()))
	it := testwait.Recv(t, items, "the next stream item")
	require.NoError(t, it.err)
	texts = append(texts, it.text)
	assert.Equal(t, []string{"one ", "two ", "three ", "four ", "five"}, texts)
	last := testwait.Recv(t, items, "the next stream item")
	require.NoError(t, last.err)
	assert.False(t, last.partial)
	assert.Equal(t, "one two three four five", last.text)
	for it := range items {
		require.NoError(t, it.err)
	}
	w := h.breaker(a).Snapshot().Window
	assert.Equal(t, int64(1), w.Calls)
	assert.Zero(t, w.Failures)
	assert.Zero(t, b.requests())
	assert.Equal(t, "primary:"+routeA, h.events.servedBy()[0])
}

// A stream that stalls longer than ChunkTimeout after partial output is cut: the
// route's failure (class timeout), returned to the caller as a *TimeoutError and
// never replaced by another route's answer.
func TestStalledStreamIsCutByChunkTimeout(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			stalledStream(t, callbacks)
		})
	}
}

func stalledStream(t *testing.T, callbacks bool) {
	h, a, b := boundsHarnessFor(t, callbacks, 500*time.Millisecond, 300*time.Millisecond, 0)
	gate := geminifake.NewGate(0)
	require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"one ", "two ", "three"}, Gate: gate}))
	items := streamTurn(h, "count")
	testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
	h.clock.waitArmed(1)
	assert.Equal(t, []string{"one ", "two "}, stepChunks(t, h, gate, items, 2, 100*time.Millisecond, 1))
	h.clock.Advance(299 * time.Millisecond)
	h.clock.waitArmed(1) // not yet
	h.clock.Advance(time.Millisecond)
	it := testwait.Recv(t, items, "the next stream item")
	require.Error(t, it.err)
	if !callbacks {
		// The callbacks pass the model's own error on; the failover model wraps it.
		var te *modelfailover.TimeoutError
		require.ErrorAs(t, it.err, &te)
		assert.ErrorIs(t, it.err, modelfailover.ErrTimeout)
		assert.Equal(t, modelfailover.BoundChunkGap, te.Bound)
		assert.Equal(t, 300*time.Millisecond, te.After)
	}
	for range items {
	}
	assert.Equal(t, int64(1), h.breaker(a).Snapshot().Window.Failures)
	assert.Zero(t, b.requests(), "partial output was given: no second answer")
	assert.Equal(t, []string{"failed:" + routeA}, h.events.servedBy())
	assert.Equal(t, "timeout", string(h.events.callList()[0].Class))
}

// A stream whose first chunk does not come within AttemptTimeout fails over: the
// caller has seen nothing yet.
func TestFirstChunkTimeoutFailsOver(t *testing.T) {
	h, a, b := boundsHarness(t, 500*time.Millisecond, 300*time.Millisecond, 0)
	gate := geminifake.NewGate(0)
	require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"never"}, Gate: gate}))
	items := streamTurn(h, "hello")
	testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
	h.clock.waitArmed(1)
	h.clock.Advance(500 * time.Millisecond)
	var finals []string
	for it := range items {
		require.NoError(t, it.err)
		if !it.partial {
			finals = append(finals, it.text)
		}
	}
	assert.Equal(t, []string{"answer from europe-west1"}, finals)
	assert.Equal(t, 1, b.requests())
	assert.Equal(t, int64(1), h.breaker(a).Snapshot().Window.Failures)
	calls := h.events.callList()
	require.Len(t, calls, 1)
	assert.Equal(t, modelfailover.Cause("timeout"), calls[0].FallbackCause)
}

// CallTimeout bounds the whole attempt, a stream that still sends included.
func TestCallTimeoutBoundsTheWholeStream(t *testing.T) {
	h, a, _ := boundsHarness(t, 0, 0, time.Second)
	gate := geminifake.NewGate(0)
	require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"one ", "two ", "three"}, Gate: gate}))
	items := streamTurn(h, "count")
	testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
	h.clock.waitArmed(1) // the whole-call timer
	assert.Equal(t, []string{"one ", "two "}, stepChunks(t, h, gate, items, 2, 400*time.Millisecond, 1))
	h.clock.Advance(200 * time.Millisecond)
	it := testwait.Recv(t, items, "the next stream item")
	var te *modelfailover.TimeoutError
	require.True(t, errors.As(it.err, &te), "got %v", it.err)
	assert.Equal(t, modelfailover.BoundCall, te.Bound)
	for range items {
	}
	assert.Equal(t, int64(1), h.breaker(a).Snapshot().Window.Failures)
}
