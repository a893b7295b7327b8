package redact_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/redact"
)

func TestAnswerKeepsIdentifiersAndMasksSecrets(t *testing.T) {
	t.Parallel()
	id := "ord_" + strings.Repeat("A1b2", 10) // 44 characters: Mask would take it for a key
	got := redact.Answer("order "+id+" refused; retry with api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dc\x1b[2J", 512)
	require.Contains(t, got, id, "an identifier in an answer is for the model")
	require.NotContains(t, got, "4eC39HqLyjWDarjtT1zdp7dc", "a key is not")
	require.NotContains(t, got, "\x1b")
	require.Contains(t, redact.Mask(id), redact.Masked, "Mask itself still masks long runs")

	require.LessOrEqual(t, len(redact.Answer(strings.Repeat("declined ", 1000), 100)), 100)
	require.Equal(t, "card 4242 4242 4242 4242 declined", strings.ReplaceAll(redact.Answer("card 4242 4242 4242 4242 declined", 0), redact.Masked, "4242 4242 4242 4242"),
		"only a card number passing Luhn is masked, the rest is kept")
	require.Contains(t, redact.Answer("card 4242 4242 4242 4242 declined", 0), redact.Masked)
}
