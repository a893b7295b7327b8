package a2aguard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breakertest"

	"github.com/agentbreaker/agentbreaker/breaker"
)

const turns = 50

// failingCase is one way a remote agent fails (issue 33, Found 1).
type failingCase struct {
	name string
	// start returns the rig's settings and a counter of what reached the remote.
	start func(t *testing.T, s shape) (rigConfig, func() int64)
	// says is what the answer after the trip names.
	says string
}

var failingCases = []failingCase{
	{
		name: "down",
		start: func(t *testing.T, s shape) (rigConfig, func() int64) {
			d := &dialCounter{}
			return rigConfig{shape: s, url: deadURL(t), httpClient: d.client()}, d.n.Load
		},
		says: "it is refusing connections",
	},
	{
		name: "503",
		start: func(t *testing.T, s shape) (rigConfig, func() int64) {
			r := newRemote(t, nil)
			r.set(mode503)
			return rigConfig{shape: s, url: r.srv.URL}, r.requests.Load
		},
		says: "it has been returning server errors",
	},
	{
		// The remote accepts the request and never answers; Config.Timeout is left at
		// its default (30s), so only the turn's deadline less the reserve bounds it. The
		// reserve is half of a short turn here, so that the root answers in time even
		// under -race on a loaded machine.
		name: "hang",
		start: func(t *testing.T, s shape) (rigConfig, func() int64) {
			r := newRemote(t, nil)
			r.set(modeHang)
			return rigConfig{shape: s, url: r.srv.URL, turnTTL: 300 * time.Millisecond, reserve: 0.5}, r.requests.Load
		},
		says: "recent requests to it timed out",
	},
}

// TestDeadRemoteFailsFast is issue 33's Found 1 for each failure and each hop: over 50
// turns at most the volume gate's requests (20, the default MinimumCalls) reach the
// remote agent, every turn is answered in agentbreaker's words and none carries the
// transport's text; after the cooldown exactly one request (the probe) goes, and
// then none again.
func TestDeadRemoteFailsFast(t *testing.T) {
	for _, fc := range failingCases {
		for _, s := range []shape{transfer, agentTool} {
			t.Run(fc.name+"/"+string(s), func(t *testing.T) {
				rc, reached := fc.start(t, s)
				r := newRig(t, rc)
				var answers []string
				for range turns {
					answers = append(answers, answerOf(t, r.turn()))
				}
				require.EqualValues(t, breaker.DefaultMinimumCalls, reached(), "requests that reached the remote in %d turns", turns)
				require.Equal(t, breaker.Open, r.breaker().State())
				first, last := answers[0], answers[turns-1]
				require.Contains(t, first, "this request to billing failed")
				require.Contains(t, last, "billing is temporarily unavailable: "+fc.says)
				require.Contains(t, last, "Do not hand this request to the remote agent again now")
				if s == agentTool {
					require.True(t, strings.HasPrefix(last, "root: "), "the root answers: %q", last)
				}

				r.clock.Advance(r.breaker().RetryAfter() + time.Second)
				answerOf(t, r.turn())
				require.EqualValues(t, breaker.DefaultMinimumCalls+1, reached(), "the half-open probe is one request")
				for range 5 {
					answerOf(t, r.turn())
				}
				require.EqualValues(t, breaker.DefaultMinimumCalls+1, reached(), "after the failed probe nothing is sent")
			})
		}
	}
}

// TestRecoveredRemoteAnswersAgain: the probe after the cooldown succeeds, the breaker
// closes and the remote's own answer reaches the user again, by either hop.
func TestRecoveredRemoteAnswersAgain(t *testing.T) {
	for _, s := range []shape{transfer, agentTool} {
		t.Run(string(s), func(t *testing.T) {
			rem := newRemote(t, nil)
			rem.set(mode503)
			r := newRig(t, rigConfig{shape: s, url: rem.srv.URL})
			for range breaker.DefaultMinimumCalls + 3 {
				answerOf(t, r.turn())
			}
			require.Equal(t, breaker.Open, r.breaker().State())
			rem.set(modeOK)
			r.clock.Advance(r.breaker().RetryAfter() + time.Second)
			got := answerOf(t, r.turn())
			require.Contains(t, got, remoteText)
			require.Equal(t, breaker.Closed, r.breaker().State())
			require.EqualValues(t, breaker.DefaultMinimumCalls+1, rem.requests.Load())
		})
	}
}

// TestStreamingTransferIsGuarded runs the transfer under an SSE runner, where the
// remote agent streams (SendStreamingMessage) as in an AgentTool.
func TestStreamingTransferIsGuarded(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	r := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL, streaming: true})
	for range turns {
		answerOf(t, r.turn())
	}
	require.EqualValues(t, breaker.DefaultMinimumCalls, rem.requests.Load())
}

// TestRetryAfterFloorsTheCooldown: a 503 with Retry-After: 120 keeps requests from
// being sent for 120 s, past the 30 s cooldown, and the refusal says so.
func TestRetryAfterFloorsTheCooldown(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	rem.retryAfter.Store(120)
	r := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL})
	first := answerOf(t, r.turn())
	require.Contains(t, first, "It may be tried again in about 2 minutes")
	// The breaker is closed (one failure), yet the remote asked for 120 s: held.
	require.Equal(t, breaker.Closed, r.breaker().State())
	held := answerOf(t, r.turn())
	require.Contains(t, held, "billing is temporarily unavailable")
	require.EqualValues(t, 1, rem.requests.Load(), "a request inside the stated delay was sent")
	r.clock.Advance(breaker.DefaultCooldown + time.Second)
	answerOf(t, r.turn())
	require.EqualValues(t, 1, rem.requests.Load(), "the cooldown passed, the stated delay did not")
	r.clock.Advance(120 * time.Second)
	answerOf(t, r.turn())
	require.EqualValues(t, 2, rem.requests.Load())
}

// TestTaskFailedIsClassifiedByItsWords: a task the remote ends failed because its own
// model is down counts against the remote (and its words stay out); one it ends
// failed with words that name no outage is the remote's answer: it reaches the user,
// cleaned, and never counts.
func TestTaskFailedIsClassifiedByItsWords(t *testing.T) {
	t.Run("outage", func(t *testing.T) {
		rem := newRemote(t, func(breakertest.Request) breakertest.Step {
			return breakertest.Fail(fmt.Errorf("model backend: HTTP 503 Service Unavailable"))
		})
		r := newRig(t, rigConfig{shape: agentTool, url: rem.srv.URL})
		for range turns {
			got := answerOf(t, r.turn())
			require.NotContains(t, got, "model backend")
		}
		require.EqualValues(t, breaker.DefaultMinimumCalls, rem.requests.Load())
	})
	t.Run("refusal", func(t *testing.T) {
		rem := newRemote(t, func(breakertest.Request) breakertest.Step {
			return breakertest.Step{Response: &model.LLMResponse{ErrorCode: "POLICY",
				ErrorMessage: "refunds above 500 EUR need a manager\x1b[31m; card 4111 1111 1111 1111"}}
		})
		r := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL})
		for range turns {
			got := r.turn()
			text := got.FinalText()
			require.Contains(t, text, "refunds above 500 EUR need a manager")
			require.NotContains(t, text, "\x1b")
			require.NotContains(t, text, "4111 1111 1111 1111")
			for _, ev := range got.Events {
				require.Empty(t, ev.ErrorMessage)
			}
		}
		require.EqualValues(t, turns, rem.requests.Load(), "a refusal is an answer: every request goes")
		require.Equal(t, breaker.Closed, r.breaker().State())
	})
}
