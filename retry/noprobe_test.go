package retry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
)

// TestMutatingOperationIsNeverTheProbe (issue 24b): once the cooldown is over, a
// Mutating operation is refused (nothing sent, the breaker stays open) where an
// ordinary one would have been the probe; a read-only operation then probes.
func TestMutatingOperationIsNeverTheProbe(t *testing.T) {
	rg := newRig(t, retry.Config{})
	b := breaker.MustNew(breaker.Config{Name: "payments", Clock: rg.clk, Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}})
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	rg.clk.Advance(30 * time.Second)

	charge := answers(classify.ClassNone)
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "payments", Breaker: b, Mutating: true}, charge.fn)
	require.Equal(t, retry.ReasonBreakerOpen, res.Reason)
	require.Equal(t, classify.FailedBeforeSend, res.Outcome)
	require.Zero(t, charge.count(), "the charge was not sent")
	require.Equal(t, breaker.Open, b.State())
	var oe *breaker.OpenError
	require.ErrorAs(t, res.Err, &oe)
	require.True(t, oe.WaitsForProbe)

	read := answers(classify.ClassNone)
	res = rg.r.Do(t.Context(), retry.Operation{Dependency: "payments", Breaker: b}, read.fn)
	require.Equal(t, classify.Succeeded, res.Outcome)
	require.Equal(t, 1, read.count())
	require.Equal(t, breaker.Closed, b.State())

	res = rg.r.Do(t.Context(), retry.Operation{Dependency: "payments", Breaker: b, Mutating: true}, charge.fn)
	require.Equal(t, classify.Succeeded, res.Outcome)
	require.Equal(t, 1, charge.count())
}
