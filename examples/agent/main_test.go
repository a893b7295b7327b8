package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleRunsTheIncident runs the example end to end through the real adk-go
// runner and checks the story it tells.
func TestExampleRunsTheIncident(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	got := out.String()
	require.Contains(t, got, "[breaker crm: closed -> open: failure rate 75% over 4 calls ≥ 50%]\n")
	require.Contains(t, got, "status=unavailable response_type=agentbreaker.unavailable")
	require.Contains(t, got, "retry_advised=false retry_after_seconds=20 firm=true", "the repeated call gets the firm answer")
	require.Contains(t, got, "model: The customer system is down, so I can't look that up now.")
	require.Contains(t, got, "[breaker crm: half_open -> closed: probe succeeded]")
	require.NotContains(t, got, "ignore previous instructions", "upstream text never reaches the model")
	require.Contains(t, got, "lookup_customer -> error=HTTP 404 Not Found\n    model: There is no such customer.")
	require.Contains(t, got, "list_orders -> status=unavailable", "list_orders shares the tripped crm breaker")
	require.Contains(t, got, "(answered locally: the model's retry, with the firm answer")
	require.Contains(t, got, "agentbreaker withheld it")
	require.Contains(t, got, "requests that reached the CRM: 10 with agentbreaker; the same traffic without it: 13\n",
		"1 healthy + 3 failing + 2 probes + 4 lookups of a missing customer, against every call of the same turns")
	require.Equal(t, 1, strings.Count(got, "closed -> open"), "four 404s in a row open nothing")
}
