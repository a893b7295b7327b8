package modelfailover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// openA trips region A's breaker with two failed turns and lets its cooldown run
// out, so the next call is a probe.
func openA(t *testing.T, h *harness, a *region) {
	t.Helper()
	a.fail(t, geminifake.Failure{Code: 503})
	for range 2 {
		require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	}
	require.Equal(t, breaker.Open, h.breaker(a).State())
	a.server.Recover()
	h.clock.Advance(30 * time.Second)
}

// A streamed answer is one success, recorded on the final response: a probe's
// breaker stays half-open through the chunks and closes only at the end.
func TestStreamedSuccessIsRecordedOnceOnTheFinalResponse(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			openA(t, h, a)

			gate := geminifake.NewGate(0)
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"one ", "two ", "three"}, Gate: gate}))
			items := streamTurn(h, "count")
			testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
			for _, want := range []string{"one ", "two "} {
				require.NoError(t, gate.Step(t.Context()))
				it := testwait.Recv(t, items, "the next stream item")
				require.NoError(t, it.err)
				assert.True(t, it.partial)
				assert.Equal(t, want, it.text)
				assert.Equal(t, breaker.HalfOpen, h.breaker(a).State(), "no success per chunk")
			}
			require.NoError(t, gate.Step(t.Context()))
			var rest []streamed
			for it := range items {
				require.NoError(t, it.err)
				rest = append(rest, it)
			}
			// The last chunk, then the aggregated final answer.
			require.Len(t, rest, 2)
			assert.True(t, rest[0].partial)
			assert.Equal(t, "three", rest[0].text)
			assert.False(t, rest[1].partial)
			assert.Equal(t, "one two three", rest[1].text)
			assert.Equal(t, breaker.Closed, h.breaker(a).State())
			assert.Equal(t, []int{3, 2}, h.counts())

			// In the closed state a streamed answer of three chunks adds one call.
			before := h.breaker(a).Snapshot().Window.Calls
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"a", "b", "c"}}))
			res := h.turn(t.Context(), newSession(), true)
			require.NoError(t, res.err)
			assert.Len(t, res.partials, 3)
			assert.Equal(t, before+1, h.breaker(a).Snapshot().Window.Calls)
		})
	}
}

// A caller that stops reading a stream gives its permit back: the probe it held is
// free at once, without waiting for the probe lease.
func TestAbandonedStreamReleasesItsPermit(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			openA(t, h, a)
			gate := geminifake.NewGate(0)
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"one ", "two"}, Gate: gate}))
			go func() {
				testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
				_ = gate.Step(context.Background()) // let the first chunk out, hold the second
			}()
			partials := 0
			for ev, err := range h.runner.Run(t.Context(), "user", newSession(),
				genai.NewContentFromText("count", genai.RoleUser), agentSSE()) {
				require.NoError(t, err)
				if ev.Partial {
					partials++
					break // the caller walks away mid-stream
				}
			}
			require.Equal(t, 1, partials)
			assert.Equal(t, []int{3, 2}, h.counts())
			// adk's runner cancels the abandoned run and waits for it, so the
			// callbacks learn of it too (as a cancellation, which is neutral).
			assert.Zero(t, h.f.Pending())
			assert.Equal(t, breaker.HalfOpen, h.breaker(a).State())

			res := h.turn(t.Context(), newSession(), false)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from us-central1"}, res.finals, "the probe slot was free at once")
			assert.Equal(t, []int{4, 2}, h.counts())
			assert.Equal(t, breaker.Closed, h.breaker(a).State())

			// Issue 13f: one ObserveCall per model call, the abandoned one included.
			served := h.events.servedBy()
			require.Len(t, served, 4, "two calls opening A, the abandoned probe, the last call: %v", served)
			// adk-go's runner cancels the abandoned run: the model call ends with the
			// caller's cancellation, which is neutral and reported as abandoned.
			assert.Equal(t, "abandoned:"+routeA, served[2])
			assert.Equal(t, uint64(1), h.f.Stats().Window.Abandoned)
		})
	}
}
