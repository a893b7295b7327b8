package openairoute_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// each runs fn for both paths, both OpenAI clients (openai-go's defaults with
// NewTransport, and openairoute.New) and both streaming modes.
func each(t *testing.T, fn func(t *testing.T, p path, c client, stream bool)) {
	for _, p := range []path{asModel, asCallbacks} {
		for _, c := range []client{sdkDefaults, viaHelper} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", p, c, stream), func(t *testing.T) { fn(t, p, c, stream) })
			}
		}
	}
}

const falseTransportError = "left without passing through Failover.Transport"

// Found 1 and 5: an OpenAI-compatible route failing with 503 received three
// requests per logical call (openai-go's two retries), slept between them, and on
// the callbacks path its failure was unclassified and logged a false ERROR.
func TestOpenAIRoute503SendsOneRequestPerAttemptAndFailsOver(t *testing.T) {
	each(t, func(t *testing.T, p path, c client, stream bool) {
		h := newHarness(t, setup{openaiFirst: true, client: c, path: p})
		require.NoError(t, h.oai.Fail(openaifake.Failure{Code: 503}))
		for i := range 3 {
			res := h.turn(t.Context(), stream)
			require.NoError(t, res.err, "turn %d", i)
			require.Equal(t, "answer from gemini", res.final, "turn %d", i)
			call := h.calls.last(t)
			require.Equal(t, modelfailover.ServedFallback, call.ServedBy)
			if i < 2 {
				require.Equal(t, modelfailover.Cause(classify.ClassHTTP5xx), call.FallbackCause, "turn %d", i)
			} else {
				require.Equal(t, modelfailover.CauseBreakerOpen, call.FallbackCause)
			}
		}
		// Two admitted attempts (the breaker trips on the second), one request each.
		require.Equal(t, 2, h.oai.Requests())
		want := []string{"0", "0"}
		require.Equal(t, want, h.oai.RetryCounts(), "openai-go retried")
		require.Equal(t, breaker.Open, h.openaiBreaker().State())
		require.Equal(t, 3, h.gem.RequestsFor(flash))
		require.NotContains(t, h.logs.String(), falseTransportError)
		require.Zero(t, h.f.Stats().RefusedRetries)
	})
}

// The other direction, with genai's opt-in retries on (Found 6: 5 requests per
// logical call): Gemini fails, the OpenAI route answers.
func TestGeminiRoute503WithRetryOptionsSendsOneRequestPerAttempt(t *testing.T) {
	each(t, func(t *testing.T, p path, c client, stream bool) {
		h := newHarness(t, setup{client: c, path: p, geminiRetry: true})
		require.NoError(t, h.gem.Fail(geminifake.Failure{Code: 503}))
		for i := range 3 {
			res := h.turn(t.Context(), stream)
			require.NoError(t, res.err, "turn %d", i)
			require.Equal(t, "answer from openai", res.final, "turn %d", i)
		}
		require.Equal(t, 2, h.gem.RequestsFor(flash), "genai's RetryOptions re-sent")
		require.Equal(t, breaker.Open, h.geminiBreaker().State())
		require.Equal(t, 3, h.oai.Requests())
		require.NotContains(t, h.logs.String(), falseTransportError)
	})
}

// Found 2, 5 and 6: a 429 with a stated delay was slept inside the turn by the
// SDK (openai-go: Retry-After verbatim; genai's retries never read it), or lost.
// Now the attempt ends at once, fails over, the delay holds the route, and it
// floors the reopen (40 s over a 30 s cooldown).
func TestStatedDelayEndsTheAttemptAndFloorsTheReopen(t *testing.T) {
	cases := []struct {
		name        string
		openaiFirst bool
		fail        func(h *harness) error
		requests    func(h *harness) int
		b           func(h *harness) *breaker.Breaker
	}{
		{"openai Retry-After", true,
			func(h *harness) error { return h.oai.Fail(openaifake.Failure{Code: 429, RetryAfter: "40"}) },
			func(h *harness) int { return h.oai.Requests() }, (*harness).openaiBreaker},
		{"openai Retry-After-Ms", true,
			func(h *harness) error { return h.oai.Fail(openaifake.Failure{Code: 429, RetryAfterMs: "40000"}) },
			func(h *harness) int { return h.oai.Requests() }, (*harness).openaiBreaker},
		{"gemini RetryInfo and Retry-After with RetryOptions", false,
			func(h *harness) error {
				return h.gem.Fail(geminifake.Failure{Code: 429, RetryDelay: 40 * time.Second, RetryAfter: "40"})
			},
			func(h *harness) int { return h.gem.RequestsFor(flash) }, (*harness).geminiBreaker},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			each(t, func(t *testing.T, p path, c client, stream bool) {
				h := newHarness(t, setup{openaiFirst: tc.openaiFirst, client: c, path: p, geminiRetry: true})
				require.NoError(t, tc.fail(h))
				// A real deadline far below openai-go's 40 s sleep: a turn that
				// slept would end with no answer.
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				for i := range 2 {
					res := h.turn(ctx, stream)
					require.NoError(t, res.err, "turn %d", i)
					require.NotEmpty(t, res.final, "turn %d", i)
					require.Equal(t, modelfailover.Cause(classify.ClassHTTP429), h.calls.last(t).FallbackCause)
				}
				// The second turn was held by the stated delay (the call path's hold):
				// at 40 s the route is asked again and its second 429 opens the breaker.
				require.Equal(t, 1, tc.requests(h), "one request per attempt, none while held")
				h.clock.Advance(40 * time.Second)
				require.NoError(t, h.turn(ctx, stream).err)
				require.Equal(t, 2, tc.requests(h), "asked again once the delay passed")
				b := tc.b(h)
				require.Equal(t, breaker.Open, b.State())
				require.Equal(t, 40*time.Second, b.RetryAfter(), "the stated delay floors the 30 s cooldown")
				h.clock.Advance(30 * time.Second)
				require.NoError(t, h.turn(ctx, stream).err)
				require.Equal(t, 2, tc.requests(h), "still held open at +30 s")
				h.clock.Advance(10 * time.Second)
				require.NoError(t, h.turn(ctx, stream).err)
				require.Equal(t, 3, tc.requests(h), "one probe at +40 s")
			})
		})
	}
}

// Found 5 and "a hang bounded": the OpenAI route hangs; AttemptTimeout (on the
// fake clock) ends the attempt, the call fails over, and openai-go sends nothing
// more (on the callbacks path it would have retried the cut request after a real
// sleep).
func TestOpenAIRouteHangIsBoundedAndFailsOver(t *testing.T) {
	each(t, func(t *testing.T, p path, c client, stream bool) {
		h := newHarness(t, setup{openaiFirst: true, client: c, path: p,
			mutate: func(cfg *modelfailover.Config) { cfg.AttemptTimeout = time.Second }})
		require.NoError(t, h.oai.Fail(openaifake.Failure{Hang: true}))
		done := make(chan result, 1)
		go func() { done <- h.turn(t.Context(), stream) }()
		testwait.Recv(t, h.oai.Hung(), "the request held by the hanging server")
		h.clock.waitArmed(t, 1)
		h.clock.Advance(time.Second)
		res := recvResult(t, done)
		require.NoError(t, res.err)
		require.Equal(t, "answer from gemini", res.final)
		require.Equal(t, modelfailover.Cause(classify.ClassTimeout), h.calls.last(t).FallbackCause)
		require.Equal(t, 1, h.oai.Requests())
		require.NotContains(t, h.logs.String(), falseTransportError)
	})
}

func recvResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	return testwait.Recv(t, ch, "the end of the turn")
}

// Found 4 and 5: without any transport, a 400 and a 401 from openai-go
// (*openai.Error) tripped the route; they are the request's and the key's
// fault, classified from the error's status.
func TestRequestAndKeyFaultsNeverTrip(t *testing.T) {
	for _, p := range []path{asModel, asCallbacks} {
		for _, c := range []client{noTransport, sdkDefaults, viaHelper} {
			for _, code := range []int{400, 401} {
				t.Run(fmt.Sprintf("%s/%s/%d", p, c, code), func(t *testing.T) {
					h := newHarness(t, setup{openaiFirst: true, client: c, path: p})
					require.NoError(t, h.oai.Fail(openaifake.Failure{Code: code}))
					for i := range 6 {
						res := h.turn(t.Context(), false)
						require.Error(t, res.err, "turn %d: the request's own fault reaches the caller", i)
					}
					want := classify.ClassValidation
					if code == 401 {
						want = classify.ClassAuth
					}
					require.Equal(t, want, h.calls.last(t).Class)
					require.Equal(t, 6, h.oai.Requests())
					require.Equal(t, breaker.Closed, h.openaiBreaker().State())
					require.Zero(t, h.gem.RequestsFor(flash), "a request's fault never fails over")
					require.NotContains(t, h.logs.String(), "openaifake", "the API's words reached the logs")
				})
			}
		}
	}
}

// Found 7: an answer stopped by a content filter is a safety block, healthy,
// with or without output, and never fails over.
func TestContentFilterIsASafetyBlock(t *testing.T) {
	for _, output := range []string{"", "partial answer"} {
		t.Run(fmt.Sprintf("output=%q", output), func(t *testing.T) {
			each(t, func(t *testing.T, p path, c client, stream bool) {
				h := newHarness(t, setup{openaiFirst: true, client: c, path: p})
				h.oai.Filter(openaifake.Filter{Output: output})
				for range 3 {
					res := h.turn(t.Context(), stream)
					if output != "" {
						require.Contains(t, res.final, output)
					}
				}
				require.Equal(t, classify.ClassSafetyBlock, h.calls.last(t).Class)
				require.Equal(t, 3, h.oai.Requests())
				require.Zero(t, h.gem.RequestsFor(flash), "a content filter never fails over")
				require.Equal(t, breaker.Closed, h.openaiBreaker().State())
				s := h.openaiBreaker().Snapshot()
				require.Zero(t, s.Window.Failures, "a filter is healthy")
			})
		})
	}
}

// A connection cut before any answer: openai-go would retry it twice after
// sleeps on the system clock. One request per attempt, and the call fails over.
func TestOpenAIRouteCutConnectionSendsOneRequestPerAttempt(t *testing.T) {
	each(t, func(t *testing.T, p path, c client, stream bool) {
		h := newHarness(t, setup{openaiFirst: true, client: c, path: p})
		require.NoError(t, h.oai.Fail(openaifake.Failure{Abort: true}))
		for i := range 2 {
			res := h.turn(t.Context(), stream)
			require.NoError(t, res.err, "turn %d", i)
			require.Equal(t, "answer from gemini", res.final, "turn %d", i)
			cause := h.calls.last(t).FallbackCause
			require.NotEqual(t, modelfailover.CauseBreakerOpen, cause)
			require.NotEqual(t, modelfailover.Cause(classify.ClassUnclassified), cause)
		}
		require.Equal(t, 2, h.oai.Requests())
		require.Equal(t, []string{"0", "0"}, h.oai.RetryCounts())
		require.Zero(t, h.f.Stats().RefusedRetries, "openai-go tried a re-send (after a real sleep)")
		require.Equal(t, breaker.Open, h.openaiBreaker().State())
	})
}

// Done means: an OpenAI-compatible route gives the Gemini route's figures. The
// same outage (503 for 20 turns, 5 s apart, probes included) costs the failing
// endpoint the same number of requests whichever provider it is (in Found 1, 21
// against 7 over 100 turns).
func TestAnOpenAIRouteGivesTheGeminiRoutesFigures(t *testing.T) {
	each(t, func(t *testing.T, p path, c client, stream bool) {
		run := func(openaiFirst bool) (failing, answered int) {
			h := newHarness(t, setup{openaiFirst: openaiFirst, client: c, path: p, geminiRetry: true})
			if openaiFirst {
				require.NoError(t, h.oai.Fail(openaifake.Failure{Code: 503}))
			} else {
				require.NoError(t, h.gem.Fail(geminifake.Failure{Code: 503}))
			}
			for range 20 {
				if res := h.turn(t.Context(), stream); res.err == nil && res.final != "" {
					answered++
				}
				h.clock.Advance(5 * time.Second)
			}
			if openaiFirst {
				return h.oai.Requests(), answered
			}
			return h.gem.RequestsFor(flash), answered
		}
		oFailing, oAnswered := run(true)
		gFailing, gAnswered := run(false)
		require.Equal(t, gFailing, oFailing, "requests at the failing endpoint")
		// Two calls trip the breaker (turn 2, at 5 s); then one probe per 30 s
		// cooldown, at 35, 65 and 95 s.
		require.Equal(t, 5, oFailing)
		require.Equal(t, 20, oAnswered)
		require.Equal(t, 20, gAnswered)
	})
}
