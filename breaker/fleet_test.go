package breaker

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/fleetlink"
)

// The fleet hooks, driven directly (package fleet drives them from Redis; its tests
// run against a real Redis): a breaker the fleet holds never sends a probe it was not
// granted, tells the fleet it has a call waiting, reports its own transitions and not
// the ones it applied, and decides alone again once the hold runs out.

func attach(t *testing.T, b *Breaker) *atomic.Int64 {
	t.Helper()
	var wakes atomic.Int64
	require.NoError(t, fleetlink.Attach(b, func() { wakes.Add(1) }))
	require.Error(t, fleetlink.Attach(b, func() {}), "a breaker belongs to one fleet")
	return &wakes
}

func gen(b *Breaker) uint64 { return b.loadSG() >> genShift }

func TestFleetHeldBreakerProbesOnlyWithTheLease(t *testing.T) {
	b, fc, rec := newTest(t, Policy{MinimumCalls: 4, Cooldown: time.Second, ProbeLease: 5 * time.Second})
	wakes := attach(t, b)

	// A local trip is the breaker's own: reported dirty, and the fleet is woken.
	trip(t, b)
	r := fleetlink.Read(b)
	require.True(t, r.Dirty)
	require.Equal(t, uint8(CauseFailureRate), r.Cause)
	require.Equal(t, int64(4), r.Failures)
	require.Positive(t, wakes.Load())

	// The fleet answers: open, 2s to go. Applying it is not a change of the breaker's own.
	require.True(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(Open),
		ReopenIn: 2 * time.Second, Hold: 10 * time.Second, Defer: 500 * time.Millisecond}))
	require.False(t, fleetlink.Read(b).Dirty)
	require.Equal(t, 2*time.Second, b.RetryAfter(), "the fleet's reopen time")

	// Past the fleet's reopen time, without the lease, calls wait and ask for it.
	fc.Advance(2 * time.Second)
	_, err := b.Allow()
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	require.Equal(t, 500*time.Millisecond, oe.RetryAfter(), "told to come back after a sync")
	require.Equal(t, Open, b.State())
	require.True(t, fleetlink.Read(b).Want)
	require.False(t, fleetlink.Read(b).Want, "read once")

	// The lease is granted: one probe, not two.
	r = fleetlink.Read(b)
	require.True(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(HalfOpen),
		Cause: uint8(CauseCooldownElapsed), Reason: "fleet", Probes: 1, Hold: 10 * time.Second, Defer: 500 * time.Millisecond}))
	require.Equal(t, HalfOpen, b.State())
	probe, err := b.Allow()
	require.NoError(t, err)
	require.True(t, probe.IsProbe())
	_, err = b.Allow()
	require.ErrorIs(t, err, ErrOpen)
	probe.Success()
	require.Equal(t, Closed, b.State())
	r = fleetlink.Read(b)
	require.True(t, r.Dirty)
	require.Equal(t, uint8(CauseProbeSucceeded), r.Cause)
	require.Equal(t, []string{
		"closed->open: failure rate 100% over 4 calls ≥ 50%",
		"open->half_open: fleet",
		"half_open->closed: probe succeeded",
	}, rec.reasons())
}

func TestFleetHoldRunsOutAndTheBreakerDecidesAlone(t *testing.T) {
	b, fc, _ := newTest(t, Policy{MinimumCalls: 4, Cooldown: time.Second})
	attach(t, b)
	trip(t, b)
	r := fleetlink.Read(b)
	require.True(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(Open),
		ReopenIn: time.Second, Hold: 3 * time.Second, Defer: 500 * time.Millisecond}))
	fc.Advance(time.Second)
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen, "held: no probe of its own")
	fc.Advance(3 * time.Second) // no sync since: the hold ran out
	p, err := b.Allow()
	require.NoError(t, err)
	require.True(t, p.IsProbe(), "alone again: it probes on its own cooldown")
}

func TestFleetApplyYieldsToALocalChange(t *testing.T) {
	b, _, _ := newTest(t, Policy{MinimumCalls: 4})
	attach(t, b)
	r := fleetlink.Read(b)
	b.ForceOpen("operator")
	require.False(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(Closed), Hold: time.Second}),
		"the breaker changed since the report: the change is published first")
	require.Equal(t, ForcedOpen, b.State())
	r = fleetlink.Read(b)
	require.True(t, r.Dirty)
	require.Equal(t, uint8(CauseOperator), r.Cause)
}

func TestFleetNewClosedPeriodEmptiesTheWindow(t *testing.T) {
	b, _, _ := newTest(t, Policy{MinimumCalls: 10})
	attach(t, b)
	calls(t, b, 3, Failure)
	calls(t, b, 2, Success)
	r := fleetlink.Read(b)
	require.Equal(t, int64(5), r.Calls)
	require.Equal(t, int64(3), r.Failures)
	g := gen(b)
	require.True(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(Closed), NewPeriod: true,
		Cause: uint8(CauseProbeSucceeded), Hold: time.Second}))
	require.Equal(t, g+1, gen(b))
	r = fleetlink.Read(b)
	require.Zero(t, r.Calls)
	require.False(t, r.Dirty)
	fleetlink.Detach(b)
	require.False(t, fleetlink.Apply(b, fleetlink.Adopt{IfLocalGen: r.LocalGen, State: uint8(Open)}), "detached")
}
