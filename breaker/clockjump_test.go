package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 18 (e): backward clock jumps were clamped in Allow only. After a 5-minute jump
// back, RetryAfter said 5m20s while Allow admitted after 30s, and a lost probe's lease
// lasted its 30s plus the jump. Every deadline derived from the clock is now clamped
// the same way, by whichever reading first sees the jump.
func TestIssue18eBackwardJumpClampsEveryDeadline(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 1})
	trip(t, b)
	fc.Advance(10 * time.Second)
	fc.Advance(-5 * time.Minute)
	require.Equal(t, 30*time.Second, b.RetryAfter(), "never more than the 30s open period that was set")
	require.Equal(t, 30*time.Second, b.Snapshot().RetryAfter)
	_, err := b.Allow()
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, 30*time.Second, oe.RetryAfter())
	fc.Advance(29 * time.Second)
	require.Equal(t, time.Second, b.RetryAfter())
	_, err = b.Allow()
	require.ErrorIs(t, err, ErrOpen)
	fc.Advance(time.Second)
	require.Zero(t, b.RetryAfter())
	lost, err := b.Allow()
	require.NoError(t, err, "Allow admits exactly when RetryAfter said")
	require.True(t, lost.IsProbe())

	// The probe's lease: 30s from the jump, not 30s plus the jump.
	fc.Advance(-5 * time.Minute)
	require.Equal(t, 30*time.Second, b.RetryAfter(), "the lease is clamped to ProbeLease")
	require.Equal(t, 1, b.Snapshot().ProbesInFlight)
	fc.Advance(30 * time.Second)
	s := b.Snapshot()
	require.Zero(t, s.ProbesInFlight, "the lease ran out 30s after the jump")
	require.EqualValues(t, 1, s.ExpiredProbes)
	next, err := b.Allow()
	require.NoError(t, err)
	require.True(t, next.IsProbe())
	next.Success()
	require.Equal(t, Closed, b.State())
}

func TestIssue18eBackwardJumpClampsAStatedDelay(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 2, Cooldown: 10 * time.Second})
	p, err := b.Allow()
	require.NoError(t, err)
	p.Report(Report{Verdict: Failure, RetryAfter: time.Minute})
	fc.Advance(-5 * time.Minute)
	call(t, b, Failure) // trips: the 60s delay is a floor, not 60s plus the jump
	require.Equal(t, Open, b.State())
	require.Equal(t, time.Minute, b.RetryAfter())
}
