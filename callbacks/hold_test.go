package callbacks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// holdFixture runs an agent with a "lookup" tool on crmSrv and a "weather" tool on
// weatherSrv. Each turn the model calls the tool named by the user's message; if the
// server's answer carries retry_after_seconds it waits reissueAfter (on the fake
// clock) and calls it again once, then answers.
func holdFixture(t *testing.T, crmSrv, weatherSrv *breakertest.Server, crm breaker.Policy, reissueAfter time.Duration) *callbackstest.Fixture {
	t.Helper()
	weather, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "weather", URL: weatherSrv.URL})
	require.NoError(t, err)
	var f *callbackstest.Fixture
	f = callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{httpLookup(t, crmSrv), weather},
		Deps: map[string]dependencymap.Dependency{
			"crm":     {Tools: []string{"lookup"}, Policy: crm},
			"weather": {Tools: []string{"weather"}},
		},
		Then: func(r breakertest.Request) breakertest.Step {
			frs := r.FunctionResponses()
			if len(frs) == 0 {
				return breakertest.Call(lastUserText(r), map[string]any{"query": "42"})
			}
			_, asked := frs[0].Response["retry_after_seconds"]
			// The server's own answer reaches the model as agentbreaker's "failed" payload
			// (never its text); the hold's local answers are "unavailable".
			if fromServer := frs[0].Response["response_type"] == "agentbreaker.failed"; asked && fromServer && countCalls(r) == 1 {
				f.Clock.Advance(reissueAfter)
				return breakertest.Call(frs[0].Name, map[string]any{"query": "42"})
			}
			return breakertest.Text("done")
		},
	})
	return f
}

func lastUserText(r breakertest.Request) string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		if c := r.Contents[i]; c.Role == "user" && len(c.Parts) > 0 && c.Parts[0].Text != "" {
			return c.Parts[0].Text
		}
	}
	return ""
}

// countCalls counts the function calls the model made since the user's last message.
func countCalls(r breakertest.Request) int {
	n := 0
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role == "user" && len(c.Parts) > 0 && c.Parts[0].Text != "" {
			break
		}
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				n++
			}
		}
	}
	return n
}

// TestRetryAfterHoldsAgainstTheModel (issue 18c): a 429 with Retry-After: 30 while the
// breaker is closed, then the model's re-issue two seconds later. The re-issue must not
// reach the dependency: it is answered locally with retry_after_seconds until the
// delay has passed, then calls go through again. Another dependency is not held.
func TestRetryAfterHoldsAgainstTheModel(t *testing.T) {
	t.Parallel()
	crm, weather := breakertest.NewServer(t), breakertest.NewServer(t)
	crm.Enqueue(breakertest.RetryAfter(429, 30))
	f := holdFixture(t, crm, weather, breaker.Policy{}, 2*time.Second)
	b := f.Breaker(t, "crm")
	start := f.Clock.Now()

	turn := f.Run(t, "lookup")
	frs := turn.FunctionResponses()
	require.Len(t, frs, 2)
	require.Equal(t, payloads.TypeFailed, frs[0].Response["response_type"], "the server's own answer, as agentbreaker's payload")
	require.Equal(t, string(classify.ClassHTTP429), frs[0].Response["error_class"])
	require.Equal(t, int64(1), crm.Requests(), "the re-issue 2 s later did not reach the dependency")
	held := frs[1].Response
	require.Equal(t, payloads.TypeUnavailable, held["response_type"])
	require.Equal(t, int64(28), toInt64(held["retry_after_seconds"]))
	require.Equal(t, string(classify.ClassHTTP429), held["error_class"])
	require.Contains(t, held["reason"], "It may be tried again in about 28 seconds.")
	require.Equal(t, breaker.Closed, b.State(), "one 429 does not open the breaker; the hold is what stops the re-issue")

	// Per dependency: the weather service was never asked for a delay.
	f.Run(t, "weather")
	require.Equal(t, int64(1), weather.Requests())

	f.Clock.Set(start.Add(2*time.Second + 27*time.Second)) // 1 s left
	turn = f.Run(t, "lookup")
	require.Equal(t, int64(1), toInt64(turn.FunctionResponses()[0].Response["retry_after_seconds"]))
	require.Equal(t, int64(1), crm.Requests(), "still held 1 s before the delay ends")

	f.Clock.Set(start.Add(2*time.Second + 28*time.Second)) // the delay has passed
	turn = f.Run(t, "lookup")
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.Equal(t, int64(2), crm.Requests(), "after the delay the call reaches the dependency")
	require.Equal(t, breaker.Closed, b.State())

	shorts := f.Events.Of(callbacks.EventShortCircuit)
	require.Len(t, shorts, 2, "the two local answers")
	require.Equal(t, classify.ClassHTTP429, shorts[0].Class)
	require.Equal(t, breaker.Closed, shorts[0].BreakerState)
	f.RequireClean(t)
}

// TestRetryAfterHoldIsBoundedByMaxRetryAfter: a server asking for an hour holds its
// dependency for the policy's MaxRetryAfter only.
func TestRetryAfterHoldIsBoundedByMaxRetryAfter(t *testing.T) {
	t.Parallel()
	crm, weather := breakertest.NewServer(t), breakertest.NewServer(t)
	crm.Enqueue(breakertest.RetryAfter(503, 3600))
	f := holdFixture(t, crm, weather, breaker.Policy{MaxRetryAfter: time.Minute}, 2*time.Second)
	start := f.Clock.Now()

	turn := f.Run(t, "lookup")
	require.Equal(t, int64(58), toInt64(turn.FunctionResponses()[1].Response["retry_after_seconds"]), "60 s at most, 2 s gone")
	require.Equal(t, int64(1), crm.Requests())

	f.Clock.Set(start.Add(59 * time.Second))
	f.Run(t, "lookup")
	require.Equal(t, int64(1), crm.Requests(), "held until MaxRetryAfter has passed")

	f.Clock.Set(start.Add(60 * time.Second))
	turn = f.Run(t, "lookup")
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.Equal(t, int64(2), crm.Requests(), "not an hour")
	f.RequireClean(t)
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1 // not a number: the comparison fails and shows it
}

// TestParallelDelaysHoldTheLatest: three parallel calls are in flight together and
// each gets a 429 with a different Retry-After (their callbacks run concurrently);
// the hold is the latest of the three, whatever order they settled in, and it never
// moves earlier.
func TestParallelDelaysHoldTheLatest(t *testing.T) {
	t.Parallel()
	crm := breakertest.NewServer(t)
	held := func(seconds string) breakertest.Behavior {
		return breakertest.Behavior{Status: 429, RetryAfter: seconds, Hang: true}
	}
	crm.Enqueue(held("10"), held("40"), held("20"))
	// Release the three together once all are in flight: a call that settled first
	// would (rightly) hold the others back before they were sent.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if crm.WaitHanging(ctx, 3) == nil {
			crm.Release()
		}
	}()
	q := func(s string) map[string]any { return map[string]any{"query": s} }
	var f *callbackstest.Fixture
	f = callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{httpLookup(t, crm)},
		Deps:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Steps: []breakertest.Step{
			breakertest.Calls(
				&genai.FunctionCall{Name: "lookup", Args: q("a")},
				&genai.FunctionCall{Name: "lookup", Args: q("b")},
				&genai.FunctionCall{Name: "lookup", Args: q("c")}),
			{Func: func(breakertest.Request) breakertest.Step {
				f.Clock.Advance(2 * time.Second)
				return breakertest.Call("lookup", q("a"))
			}},
			breakertest.Text("done"),
		},
	})
	turn := f.Run(t, "look up a, b and c")
	frs := turn.FunctionResponses()
	require.Len(t, frs, 4)
	require.Equal(t, int64(3), crm.Requests(), "the three parallel calls, not the re-issue")
	require.Equal(t, int64(38), toInt64(frs[3].Response["retry_after_seconds"]), "the latest delay (40 s), 2 s gone")
	f.RequireClean(t)
}

// TestForcedClosedIgnoresTheHold: an operator who forces the breaker closed lets the
// calls through during a server's delay; a reset to closed does not.
func TestForcedClosedIgnoresTheHold(t *testing.T) {
	t.Parallel()
	crm, weather := breakertest.NewServer(t), breakertest.NewServer(t)
	crm.Enqueue(breakertest.RetryAfter(429, 30))
	f := holdFixture(t, crm, weather, breaker.Policy{}, 2*time.Second)
	f.Run(t, "lookup")
	require.Equal(t, int64(1), crm.Requests())
	b := f.Breaker(t, "crm")
	b.Reset("operator")
	f.Run(t, "lookup")
	require.Equal(t, int64(1), crm.Requests(), "closed: still held")
	b.ForceClosed("operator: the delay is wrong")
	turn := f.Run(t, "lookup")
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.Equal(t, int64(2), crm.Requests(), "forced closed: the call goes through")
	f.RequireClean(t)
}
