package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// Problems names every field out of range, not only the first; Validate returns the
// first of them.
func TestPolicyProblemsListsEveryField(t *testing.T) {
	p := breaker.Policy{FailureRateThreshold: 7, MinimumCalls: -1, Cooldown: time.Nanosecond, HalfOpenProbes: 500}.WithDefaults()
	var fields []string
	for _, ce := range p.Problems() {
		fields = append(fields, ce.Field)
	}
	require.Equal(t, []string{"Policy.FailureRateThreshold", "Policy.MinimumCalls", "Policy.Cooldown", "Policy.HalfOpenProbes"}, fields)
	require.Equal(t, p.Problems()[0], p.Validate())
	require.Empty(t, breaker.Policy{}.WithDefaults().Problems())
	require.NoError(t, breaker.Policy{}.WithDefaults().Validate())
}
