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

// TestStatedDelayHoldsTheOperationsDependency: an operation's breaker runs on the
// call path, so a dependency that answered 429 with a delay is held for it, as at
// every other hop: a second operation inside the delay is refused before sending
// (the breaker still closed); after it, the operation is sent.
func TestStatedDelayHoldsTheOperationsDependency(t *testing.T) {
	rg := newRig(t, retry.Config{Policy: retry.Policy{MaxAttempts: 1}})
	b := breaker.MustNew(breaker.Config{Name: "quotes", Clock: rg.clk, Policy: breaker.Policy{MinimumCalls: 100, Jitter: -1}})
	limited := classify.ForClass(classify.ClassHTTP429)
	limited.RetryAfter = 20 * time.Second
	first := answers().with(limited)
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "quotes", Breaker: b}, first.fn)
	require.Equal(t, classify.ClassHTTP429, res.Last.Class)
	require.Equal(t, breaker.Closed, b.State())

	rg.clk.Advance(19 * time.Second)
	second := answers(classify.ClassNone)
	res = rg.r.Do(t.Context(), retry.Operation{Dependency: "quotes", Breaker: b}, second.fn)
	require.Equal(t, retry.ReasonBreakerOpen, res.Reason)
	require.Equal(t, classify.FailedBeforeSend, res.Outcome)
	require.Zero(t, second.count(), "the held operation was sent")

	rg.clk.Advance(time.Second)
	res = rg.r.Do(t.Context(), retry.Operation{Dependency: "quotes", Breaker: b}, second.fn)
	require.Equal(t, classify.Succeeded, res.Outcome)
	require.Equal(t, 1, second.count())
}
