package payloads_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

func TestShed(t *testing.T) {
	t.Parallel()
	m := payloads.Shed(payloads.Info{Dependency: "search", Tool: "web_search", Class: classify.ClassHTTP5xx, Shed: 0.3})
	require.Equal(t, payloads.TypeShed, m[payloads.KeyResponseType])
	require.Equal(t, payloads.StatusOverloaded, m[payloads.KeyStatus])
	require.Equal(t, false, m[payloads.KeyCallSent])
	require.Equal(t, true, m[payloads.KeyRetryAdvised])
	require.Equal(t, "search is partly overloaded (it has been returning server errors), so this call was not sent: about 30% of calls to it are being held back; most calls to it are still sent.", m[payloads.KeyReason])
	require.Equal(t, int64(30), m[payloads.KeyShedPercent])
	require.Contains(t, m[payloads.KeyInstruction], "try once more later")
	require.True(t, payloads.Is(m))
	require.Equal(t, classify.Neutral, classify.ToolResult(m).Verdict, "a shed payload is never a call")

	// A stated delay: the model is told when.
	m = payloads.Shed(payloads.Info{Dependency: "search", RetryAfter: 20 * time.Second})
	require.Equal(t, "http_429", m[payloads.KeyErrorClass])
	require.Equal(t, int64(20), m[payloads.KeyRetryAfterSeconds])
	require.Contains(t, m[payloads.KeyReason], "It may be tried again in about 20 seconds.")
	require.Contains(t, m[payloads.KeyInstruction], "before the time given")

	// The loop guard's firm answer: stop in this turn, no retry advised.
	m = payloads.Shed(payloads.Info{Dependency: "search", Firm: true, ShortCircuits: 3})
	require.Equal(t, false, m[payloads.KeyRetryAdvised])
	require.Equal(t, true, m[payloads.KeyFirm])
	require.Contains(t, m[payloads.KeyInstruction], "Stop calling it")
}
