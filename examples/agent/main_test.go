package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExampleRunsTheIncident(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	got := out.String()
	require.Contains(t, got, "breaker crm: closed -> open (failure rate 83.3% over 6 calls ≥ 50%; retry-after 45s)")
	require.Contains(t, got, `"status":"unavailable"`)
	require.Contains(t, got, "breaker crm: half_open -> closed (probe succeeded)")
	require.NotContains(t, got, "ignore previous instructions", "upstream text never reaches the model")
	require.Contains(t, got, "requests that reached the CRM: 8\n", "1 healthy + 5 failing + the probe + 1 after recovery")
	require.Equal(t, 1, strings.Count(got, "closed -> open"))
}
