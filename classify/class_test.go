package classify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestClasses(t *testing.T) {
	t.Parallel()
	want := []classify.Class{
		"none", "connection_refused", "dns", "tls", "tls_config", "request_config", "connect_timeout",
		"timeout", "connection_reset", "transport", "http_5xx", "http_429", "http_408",
		"not_found", "http_4xx", "auth", "validation", "empty_result", "canceled",
		"deadline", "breaker_open", "bulkhead_full", "safety_block", "invalid_argument",
		"refused", "unclassified",
	}
	got := classify.Classes()
	require.Equal(t, want, got)

	got[0] = "mutated"
	require.Equal(t, classify.ClassNone, classify.Classes()[0], "Classes must return a copy")

	for _, c := range want {
		require.True(t, c.Known(), c)
		require.Equal(t, string(c), c.String())
		d := classify.ForClass(c)
		require.Equal(t, c, d.Class)
		requireValid(t, d)
		require.Zero(t, d.StatusCode)
		require.Zero(t, d.RetryAfter)
		if d.ConfigFault {
			require.NotEqual(t, classify.Counts, d.Verdict, "%s: config faults must never trip", c)
		}
	}
}

func TestClassUnknown(t *testing.T) {
	t.Parallel()
	for _, c := range []classify.Class{"", "None", "HTTP_5XX", "connection refused", "oops"} {
		require.False(t, c.Known(), "%q", c)
		require.Equal(t, classify.ClassUnclassified, classify.ForClass(c).Class, "%q", c)
	}
}
