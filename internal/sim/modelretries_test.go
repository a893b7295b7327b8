package sim_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// Issue 31's Found 1 and 2 in virtual time: openai-go's default retries triple the
// requests of each admitted call and sleep inside the turn; a stated delay longer
// than the turn's deadline loses every answer and keeps the breaker blind. With the
// failover owning retries, one request per admitted call, every turn answered.
func TestModelRetriesRows(t *testing.T) {
	rows, err := sim.RunModelRetries(sim.ModelRetries{})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	sdk, rule := rows[0], rows[1]
	require.Equal(t, 3.0, sdk.PerAttempt)
	require.Equal(t, 1.0, rule.PerAttempt)
	require.Equal(t, 100, rule.Answered)
	require.Equal(t, 100, sdk.Answered, "503 retries fit the 60 s deadline")
	require.Greater(t, sdk.Slept, time.Duration(0))
	require.Zero(t, rule.Slept)

	require.NoError(t, sim.WriteModelRetries(os.Stdout, sim.ModelRetries{}, rows))

	s := sim.ModelRetries{Status: 429, RetryAfter: 40 * time.Second, Deadline: 2 * time.Second, Turns: 20}
	rows, err = sim.RunModelRetries(s)
	require.NoError(t, err)
	sdk, rule = rows[0], rows[1]
	require.Zero(t, sdk.Answered, "every turn slept into its deadline")
	require.Equal(t, 20, sdk.Deadline)
	require.Equal(t, 20, rule.Answered)
	require.Zero(t, sdk.Attempts-sdk.Requests, "one request each: the sleep outlasts the deadline")
	require.Less(t, rule.Attempts, sdk.Attempts, "the stated delay holds the route open")
	require.NoError(t, sim.WriteModelRetries(os.Stdout, s, rows))
}

func TestModelRetriesNamesABadField(t *testing.T) {
	_, err := sim.RunModelRetries(sim.ModelRetries{Status: 200})
	require.ErrorContains(t, err, "ModelRetries.Status 200")
	_, err = sim.RunModelRetries(sim.ModelRetries{Turns: -1})
	require.ErrorContains(t, err, "ModelRetries.Turns -1")
}
