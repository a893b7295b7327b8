package modelfailover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

const (
	routeA = pro + "@us-central1"
	routeB = pro + "@europe-west1"
)

func twoRegions(t *testing.T) (*region, *region) {
	return newRegion(t, "us-central1", pro), newRegion(t, "europe-west1", pro)
}

// Done means, cases one and two: region A returns 503 until told otherwise, turns
// are served by region B with the hook fired once; A recovers, one probe goes to
// it after the cooldown, and traffic returns.
func TestRegionOutageFailsOverAndReturnsAfterOneProbe(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streaming"}[streaming], func(t *testing.T) {
			a, b := twoRegions(t)
			h := newHarness(t, harnessConfig{regions: []*region{a, b}})
			ctx := t.Context()
			a.fail(t, geminifake.Failure{Code: 503})

			// First turn: A fails, B answers. A's breaker is still closed, so this
			// is a per-call fallback: counted, not announced.
			res := h.turn(ctx, newSession(), streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
			assert.Equal(t, routeB, res.last.CustomMetadata[modelfailover.MetaRoute])
			assert.Equal(t, true, res.last.CustomMetadata[modelfailover.MetaFailover])
			assert.Equal(t, []int{1, 1}, h.counts())
			assert.Empty(t, h.events.failovers(), "one failure is below the volume gate: no failover")
			assert.Equal(t, routeA, h.f.Stats().Serving.Name)
			calls := h.events.callList()
			require.Len(t, calls, 1)
			assert.Equal(t, modelfailover.ServedFallback, calls[0].ServedBy)
			assert.Equal(t, routeA, calls[0].FallbackFrom.Name)
			assert.Equal(t, modelfailover.Cause("http_5xx"), calls[0].FallbackCause)

			// Second turn: A fails again and its breaker trips; B answers, and the
			// change is announced once, by this call.
			res = h.turn(ctx, newSession(), streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []int{2, 2}, h.counts())
			assert.Equal(t, breaker.Open, h.breaker(a).State())
			require.Len(t, h.events.failovers(), 1)
			ev := h.events.failovers()[0]
			assert.Equal(t, routeA, ev.From.Name)
			assert.Equal(t, routeB, ev.To.Name)
			assert.Equal(t, modelfailover.Cause("http_5xx"), ev.Cause)
			assert.Equal(t, breaker.Open, ev.BreakerState, "the breaker that opened")
			assert.Equal(t, routeA+"'s breaker opened after failures (last: http_5xx, status 503)", ev.Reason)
			assert.NotEmpty(t, ev.RequestID, "the invocation that saw the change")
			assert.True(t, ev.Fallback)

			// While A is open no request reaches it.
			for range 3 {
				res = h.turn(ctx, newSession(), streaming)
				require.NoError(t, res.err)
				assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
			}
			assert.Equal(t, []int{2, 5}, h.counts())
			assert.Len(t, h.events.failovers(), 1, "the hook fires once per change, not per turn")

			stats := h.f.Stats()
			assert.Equal(t, routeB, stats.Serving.Name)
			assert.Equal(t, []modelfailover.FailoverCount{{From: routeA, To: routeB, Count: 1}}, stats.Failovers)
			assert.Equal(t, uint64(5), stats.Window.Calls)
			assert.Equal(t, uint64(5), stats.Window.Fallback)
			assert.Equal(t, 1.0, stats.Window.FallbackShare)

			// A recovers; nothing goes to it before the cooldown ends.
			a.server.Recover()
			h.clock.Advance(29 * time.Second)
			res = h.turn(ctx, newSession(), streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []int{2, 6}, h.counts())

			// The cooldown ends: one probe goes to A, it answers, traffic returns.
			h.clock.Advance(time.Second)
			res = h.turn(ctx, newSession(), streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from us-central1"}, res.finals)
			assert.Equal(t, routeA, res.last.CustomMetadata[modelfailover.MetaRoute])
			assert.Equal(t, false, res.last.CustomMetadata[modelfailover.MetaFailover])
			assert.Equal(t, []int{3, 6}, h.counts())
			assert.Equal(t, breaker.Closed, h.breaker(a).State())
			res = h.turn(ctx, newSession(), streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []int{4, 6}, h.counts())

			evs := h.events.failovers()
			require.Len(t, evs, 2)
			assert.Equal(t, routeB, evs[1].From.Name)
			assert.Equal(t, routeA, evs[1].To.Name)
			assert.Equal(t, modelfailover.CauseProbeSucceeded, evs[1].Cause)
			assert.False(t, evs[1].Fallback)
			assert.Equal(t, h.events.hook, h.events.observed, "the Observer sees the same events")
			assert.Equal(t, []modelfailover.FailoverCount{
				{From: routeB, To: routeA, Count: 1}, {From: routeA, To: routeB, Count: 1},
			}, h.f.Stats().Failovers, "sorted by from, then to")

			// Each change is one warning with the stable keys.
			warns := h.logs.records(t, "WARN")
			require.Len(t, warns, 2)
			for i, want := range []map[string]any{
				{"from": routeA, "to": routeB, "cause": "http_5xx", "breaker_state": "open",
					"model": pro, "region": "europe-west1", "policy_version": "test-v1",
					"reason":     routeA + "'s breaker opened after failures (last: http_5xx, status 503)",
					"request_id": ev.RequestID},
				{"from": routeB, "to": routeA, "cause": "probe_succeeded", "breaker_state": "closed",
					"model": pro, "region": "us-central1", "policy_version": "test-v1"},
			} {
				for k, v := range want {
					assert.Equal(t, v, warns[i][k], "record %d key %s", i, k)
				}
			}
			assert.Equal(t, "model failover: back on the primary route", warns[1]["msg"])
			// Nothing the endpoint wrote ("geminifake us-central1: service
			// unavailable") reaches a record, at any level.
			h.logs.mu.Lock()
			assert.NotContains(t, h.logs.buf.String(), "service unavailable")
			assert.Contains(t, h.logs.buf.String(), `"msg":"model failover: attempt failed"`)
			h.logs.mu.Unlock()
		})
	}
}

// Many turns race for a recovered region: exactly one probe reaches it, the rest
// are served by the fallback while the probe is out.
func TestConcurrentTurnsSendOneProbe(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}})
	ctx := t.Context()
	a.fail(t, geminifake.Failure{Code: 503})
	for range 2 {
		require.NoError(t, h.turn(ctx, newSession(), false).err)
	}
	require.Equal(t, breaker.Open, h.breaker(a).State())
	require.Equal(t, []int{2, 2}, h.counts())

	gate := geminifake.NewGate(0)
	a.server.Recover()
	require.NoError(t, a.server.SetReply(geminifake.Reply{Text: "answer from us-central1", Gate: gate}))
	h.clock.Advance(30 * time.Second)

	const n = 6
	results := make(chan result, n)
	for range n {
		go func() { results <- h.turn(context.Background(), newSession(), false) }()
	}
	testwait.Recv(t, gate.Arrived(), "the request to reach the fake model") // the probe is held at A
	for range n - 1 {
		res := testwait.Recv(t, results, "the turn's result")
		require.NoError(t, res.err)
		assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
	}
	assert.Equal(t, []int{3, 2 + n - 1}, h.counts())
	assert.Equal(t, breaker.HalfOpen, h.breaker(a).State())
	gate.Release()
	res := testwait.Recv(t, results, "the turn's result")
	require.NoError(t, res.err)
	assert.Equal(t, []string{"answer from us-central1"}, res.finals)
	assert.Equal(t, breaker.Closed, h.breaker(a).State())
	assert.Equal(t, []int{3, 2 + n - 1}, h.counts())
}

// Done means, case three: a 429 asking for 40 seconds keeps the route from being
// called for 40 seconds of injected time: held after the first, open after the
// second, though its cooldown is 30. The delay arrives as a RetryInfo detail or,
// captured by the transport, as a Retry-After header.
func TestQuotaDelayFloorsTheCooldown(t *testing.T) {
	tests := []struct {
		name      string
		failure   geminifake.Failure
		callbacks bool
	}{
		{name: "RetryInfo", failure: geminifake.Failure{Code: 429, RetryDelay: 40 * time.Second}},
		{name: "Retry-After header", failure: geminifake.Failure{Code: 429, RetryAfter: "40"}},
		{name: "Retry-After header through the callbacks", failure: geminifake.Failure{Code: 429, RetryAfter: "40"},
			callbacks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if tt.callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM {
					llm, err := gemini.NewModel(t.Context(), pro, a.server.ClientConfig(f.Transport))
					require.NoError(t, err)
					return llm
				}
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			ctx := t.Context()
			a.fail(t, tt.failure)
			for range 2 {
				res := h.turn(ctx, newSession(), false)
				require.NoError(t, res.err)
				assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
			}
			// The stated delay holds A on the call path, as at every hop: the second
			// turn went to B without asking A, and the failover was announced.
			assert.Equal(t, 1, a.requests(), "the second turn was held by the stated delay")
			assert.Equal(t, breaker.Closed, h.breaker(a).State())
			assert.Equal(t, modelfailover.Cause("http_429"), h.events.failovers()[0].Cause)
			h.clock.Advance(40*time.Second - time.Millisecond)
			require.NoError(t, h.turn(ctx, newSession(), false).err)
			assert.Equal(t, 1, a.requests(), "A is still held at 40 s less 1 ms")

			// At 40 seconds A is asked again, answers 429 again, and its breaker opens
			// with the stated delay as the floor of its reopen.
			h.clock.Advance(time.Millisecond)
			require.NoError(t, h.turn(ctx, newSession(), false).err)
			require.Equal(t, breaker.Open, h.breaker(a).State())
			assert.Equal(t, 40*time.Second, h.breaker(a).RetryAfter())
			assert.Equal(t, []int{2, 4}, h.counts())
			for _, step := range []time.Duration{30 * time.Second, 9*time.Second + 999*time.Millisecond} {
				h.clock.Advance(step)
				require.NoError(t, h.turn(ctx, newSession(), false).err)
				assert.Equal(t, 2, a.requests(), "A is still open after %s", step)
			}
			assert.Equal(t, []int{2, 6}, h.counts())

			// At 40 seconds the probe goes, meets another 429 and the floor applies again.
			h.clock.Advance(time.Millisecond)
			require.NoError(t, h.turn(ctx, newSession(), false).err)
			assert.Equal(t, []int{3, 7}, h.counts())
			assert.Equal(t, 40*time.Second, h.breaker(a).RetryAfter())
			h.clock.Advance(39 * time.Second)
			require.NoError(t, h.turn(ctx, newSession(), false).err)
			assert.Equal(t, []int{3, 8}, h.counts())

			a.server.Recover()
			h.clock.Advance(time.Second)
			res := h.turn(ctx, newSession(), false)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from us-central1"}, res.finals)
			assert.Equal(t, []int{4, 8}, h.counts())
			assert.Zero(t, h.f.Pending())
		})
	}
}

// Done means, case four: a stream that fails after two chunks does not fail over
// and does not answer twice; the failure is recorded and returned.
func TestStreamFailingAfterTwoChunksIsNotPapered(t *testing.T) {
	tests := []struct {
		name      string
		abort     bool
		callbacks bool
		wantAPI   bool
	}{
		{name: "in-band error", wantAPI: true},
		{name: "connection cut", abort: true},
		{name: "in-band error through the callbacks", callbacks: true, wantAPI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if tt.callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM {
					llm, err := gemini.NewModel(t.Context(), pro, a.server.ClientConfig(f.Transport))
					require.NoError(t, err)
					return llm
				}
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			gate := geminifake.NewGate(0)
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Chunks: []string{"Hel", "lo ", "world"}, Gate: gate,
				Fail: &geminifake.Failure{Code: 503, AfterChunks: 2, Abort: tt.abort}}))

			items := streamTurn(h, "hi")
			ctx := t.Context()
			testwait.Recv(t, gate.Arrived(), "the request to reach the fake model")
			for _, want := range []string{"Hel", "lo "} {
				require.NoError(t, gate.Step(ctx))
				it := testwait.Recv(t, items, "the next stream item")
				assert.True(t, it.partial)
				assert.Equal(t, want, it.text)
				assert.Equal(t, routeA, it.meta[modelfailover.MetaRoute])
				// Nothing is recorded per chunk.
				assert.Zero(t, h.breaker(a).Snapshot().Window.Calls)
			}
			require.NoError(t, gate.Step(ctx))
			var rest []streamed
			for it := range items {
				rest = append(rest, it)
			}
			require.Len(t, rest, 1, "no second answer follows the failure: %+v", rest)
			require.Error(t, rest[0].err)
			var apiErr genai.APIError
			assert.Equal(t, tt.wantAPI, errors.As(rest[0].err, &apiErr), "error: %v", rest[0].err)
			assert.False(t, errors.Is(rest[0].err, modelfailover.ErrAllRoutesFailed))

			assert.Equal(t, []int{1, 0}, h.counts(), "no failover after output was streamed")
			w := h.breaker(a).Snapshot().Window
			assert.Equal(t, int64(1), w.Calls)
			assert.Equal(t, int64(1), w.Failures)
			assert.Empty(t, h.events.failovers())
			assert.Equal(t, []string{"failed:" + routeA}, h.events.servedBy())
			assert.Zero(t, h.f.Pending())
		})
	}
}

// Done means, case five: with every route open the agent answers honestly that it
// is unavailable, and no request reaches any region during the cooldown.
func TestAllRoutesOpenAnswersWithoutCallingAModel(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			ctx := t.Context()
			a.fail(t, geminifake.Failure{Code: 503})
			b.fail(t, geminifake.Failure{Code: 503, Message: "europe is down"})

			// While the breakers fill, each turn tries both and fails with both errors.
			for i := range 2 {
				res := h.turn(ctx, newSession(), false)
				require.Error(t, res.err)
				var apiErr genai.APIError
				require.ErrorAs(t, res.err, &apiErr)
				assert.Equal(t, 503, apiErr.Code)
				if !callbacks {
					require.ErrorIs(t, res.err, modelfailover.ErrAllRoutesFailed)
					assert.Contains(t, res.err.Error(), "europe is down")
				}
				assert.Equal(t, []int{i + 1, i + 1}, h.counts())
			}
			require.Equal(t, breaker.Open, h.breaker(a).State())
			require.Equal(t, breaker.Open, h.breaker(b).State())

			for _, step := range []time.Duration{0, 15 * time.Second, 14 * time.Second} {
				h.clock.Advance(step)
				res := h.turn(ctx, newSession(), false)
				require.NoError(t, res.err)
				require.Len(t, res.finals, 1)
				assert.Contains(t, res.finals[0], "temporarily unable to answer")
				assert.Equal(t, modelfailover.Unavailable, res.last.CustomMetadata[modelfailover.MetaRoute])
				assert.Equal(t, true, res.last.CustomMetadata[modelfailover.MetaUnavailable])
				assert.Equal(t, []int{2, 2}, h.counts(), "no request during the cooldown")
			}
			assert.Equal(t, uint64(3), h.f.Stats().Window.Unavailable)
			evs := h.events.failovers()
			require.Len(t, evs, 1)
			assert.Equal(t, modelfailover.Unavailable, evs[0].To.Name)
			assert.Equal(t, modelfailover.CauseAllRoutesOpen, evs[0].Cause)
			assert.Equal(t, modelfailover.Unavailable, h.f.Stats().Serving.Name)

			a.server.Recover()
			h.clock.Advance(time.Second)
			res := h.turn(ctx, newSession(), false)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from us-central1"}, res.finals)
			assert.Equal(t, []int{3, 2}, h.counts())
			evs = h.events.failovers()
			require.Len(t, evs, 2)
			assert.Equal(t, modelfailover.Unavailable, evs[1].From.Name)
			assert.Equal(t, modelfailover.CauseProbeSucceeded, evs[1].Cause)
		})
	}
}
