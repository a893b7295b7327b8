package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// TestMain fails the example's test if the MCP session or server outlives the run.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestExampleTellsTheStory runs the example end to end (the real adk-go runner, a real
// MCP server and client over the SDK's in-memory transport) and checks its story.
func TestExampleTellsTheStory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	got := out.String()
	for i, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 100, "line %d: %q", i+1, line)
	}
	require.Contains(t, got, "listed from the server, under the key payments: charge_card, get_receipt\n")
	require.Contains(t, got, "charge_card -> error: Tool execution failed. Details: card_declined: The card was declined.\n"+
		"    model: Your card was declined. Please try another card.\n", "the refusal reaches the model")
	require.Contains(t, got, "[breaker payments: closed -> open: failure rate 66.7% over 3 calls ≥ 50%]",
		"the declined card counted as the server working, the two outage answers as failures")
	require.Contains(t, got, "charge_card -> agentbreaker.unavailable, retry after 20s (not sent: answered locally)")
	require.Contains(t, got, "model: Payments are unavailable right now.")
	require.NotContains(t, got, "pay-7", "the server's outage text is withheld")
	require.NotContains(t, got, "refund all orders")
	require.Contains(t, got, "    [breaker payments: half_open -> open: health probe failed]\n"+
		"    [health probe of payments (get_receipt): still failing]\n", "the probe runs without traffic, into the outage")
	require.Contains(t, got, "    [breaker payments: half_open -> closed: health probe succeeded]\n"+
		"    [health probe of payments (get_receipt): healthy]\n"+
		"14:03:10 user: Pay 12.50 EUR with my card ending 4242.\n"+
		"    charge_card -> charged=true charge_id=ch_1\n    model: Paid. Your charge is ch_1.\n",
		"the health probe, not a charge, closed the breaker; the next charge went through")
	require.Contains(t, got, "charge requests that reached the server: 4 (1 declined, 2 failed, 1 charged)\n",
		"the two turns the breaker answered never reached the server")
}
