package telemetry_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
)

// spanRuns numbers the runs of TestPluginDecisionsLandOnADKToolSpans: the recorder is
// global to the process, so with -count each run needs call IDs of its own.
var spanRuns atomic.Int64

// toolSpan returns the ended "execute_tool get_invoice" span of a function call ID.
func toolSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, callID string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "execute_tool get_invoice" && attrMap(s.Attributes())["gen_ai.tool.call.id"] == callID {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "adk-go's execute_tool span of %s", callID)
	return found[0]
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

// TestPluginDecisionsLandOnADKToolSpans runs the callbacks plugin, with Telemetry as
// its Observer, in adk-go's runner under a recording tracer provider: each decision
// the plugin makes (a call sent, a short-circuit, a probe) must land as attributes and
// one event on the "execute_tool" span adk-go itself created for that call, and the
// short-circuit's log record must name the call.
func TestPluginDecisionsLandOnADKToolSpans(t *testing.T) {
	t.Parallel()
	rec := globalSpans()
	prefix := fmt.Sprintf("span%d", spanRuns.Add(1))
	id := func(n int) string { return fmt.Sprintf("%s-%d", prefix, n) }
	a := newBillingAgent(t, prefix)

	// Four calls, two of them 503s, trip the breaker; a turn later the model is
	// refused twice (calls 5 and 6).
	a.server.Enqueue(breakertest.OK("paid"), breakertest.OK("paid"))
	a.server.Set(breakertest.Status(http.StatusServiceUnavailable))
	for range 4 {
		a.turn(t)
	}
	b, _ := a.deps.Get("billing")
	require.Equal(t, breaker.Open, b.State())
	a.clock.Advance(10 * time.Second)
	a.turn(t)
	require.Equal(t, int64(4), a.server.Requests())
	// After the cooldown the next call (7) is the probe.
	a.server.Set(breakertest.OK("paid"))
	a.clock.Advance(25 * time.Second)
	a.turn(t)
	require.Equal(t, breaker.Closed, b.State())
	spans := rec.Ended()

	failed := toolSpan(t, spans, id(3))
	require.Equal(t, []string{"agentbreaker.attempt"}, eventNames(failed))
	require.Subset(t, attrMap(failed.Attributes()), map[string]any{
		"agentbreaker.decision": "attempt", "agentbreaker.dependency": "billing", "agentbreaker.outcome": "FAILED",
		"agentbreaker.error_class": "http_5xx", "agentbreaker.elapsed_ms": 250.0, "agentbreaker.policy_version": "v7",
	})

	// The fourth call tripped the breaker: the transition lands on its span (issue 35d),
	// with the keys of the transition's log record, before the attempt.
	tripped := toolSpan(t, spans, id(4))
	require.Equal(t, []string{"agentbreaker.transition", "agentbreaker.attempt"}, eventNames(tripped))
	require.Subset(t, attrMap(tripped.Events()[0].Attributes), map[string]any{
		"agentbreaker.decision": "transition", "agentbreaker.dependency": "billing", "agentbreaker.from": "closed",
		"agentbreaker.to": "open", "agentbreaker.cause": "failure_rate", "agentbreaker.breaker_state": "open",
		"agentbreaker.policy_version": "v7", "agentbreaker.window_failed_calls": int64(2), "agentbreaker.window_calls": int64(4),
	})

	for _, n := range []int{5, 6} {
		short := toolSpan(t, spans, id(n))
		require.Equal(t, []string{"agentbreaker.short_circuit"}, eventNames(short), id(n))
		require.Subset(t, attrMap(short.Attributes()), map[string]any{
			"agentbreaker.decision": "short_circuit", "agentbreaker.dependency": "billing", "agentbreaker.breaker_state": "open",
			"agentbreaker.outcome": "FAILED_BEFORE_SEND", "agentbreaker.error_class": "breaker_open",
			"agentbreaker.retry_after_ms": int64(20_000),
			// adk-go's own attribute: this is adk's span.
			"gen_ai.tool.name": "get_invoice",
		}, id(n))
		require.Subset(t, attrMap(short.Events()[0].Attributes), map[string]any{"agentbreaker.breaker_state": "open"})
	}

	probe := toolSpan(t, spans, id(7))
	// Its admission moved the breaker to half-open, its success closed it.
	require.Equal(t, []string{"agentbreaker.transition", "agentbreaker.transition", "agentbreaker.probe"}, eventNames(probe))
	require.Subset(t, attrMap(probe.Events()[0].Attributes), map[string]any{
		"agentbreaker.from": "open", "agentbreaker.to": "half_open", "agentbreaker.cause": "cooldown_elapsed",
	})
	require.Subset(t, attrMap(probe.Events()[1].Attributes), map[string]any{
		"agentbreaker.from": "half_open", "agentbreaker.to": "closed", "agentbreaker.cause": "probe_succeeded",
	})
	require.Subset(t, attrMap(probe.Attributes()), map[string]any{
		"agentbreaker.decision": "probe", "agentbreaker.outcome": "SUCCEEDED", "agentbreaker.error_class": "none",
	})

	logged := a.logs.withMsg(t, "agentbreaker: call short-circuited")
	require.Len(t, logged, 2)
	for i, r := range logged {
		// request_id is the invocation (issue 15f); both calls were in the fifth turn.
		require.Equal(t, logged[0]["request_id"], r["request_id"])
		require.NotEqual(t, id(5+i), r["request_id"])
		require.Regexp(t, `^e-`, r["request_id"], "adk-go's invocation ID")
		require.Equal(t, id(5+i), r["function_call_id"])
		require.Equal(t, "get_invoice", r["tool"])
		require.Equal(t, "open", r["breaker_state"])
		require.Equal(t, "v7", r["policy_version"])
	}
}
