package breaker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMutationIsNeverTheProbe(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{})
	trip(t, b)
	fc.Advance(30 * time.Second)

	_, err := b.AllowNoProbe()
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.True(t, oe.WaitsForProbe)
	require.Equal(t, Open, b.State(), "a mutation does not end the open period")
	require.Contains(t, err.Error(), "may not be the probe")

	read, err := b.Allow()
	require.NoError(t, err)
	require.True(t, read.IsProbe(), "a read-only call of the same dependency probes")

	_, err = b.AllowNoProbe()
	require.ErrorAs(t, err, &oe)
	require.Equal(t, HalfOpen, oe.State)
	read.Success()
	require.Equal(t, Closed, b.State())

	p, err := b.AllowNoProbe()
	require.NoError(t, err, "closed: a mutation goes through")
	require.False(t, p.IsProbe())
	p.Success()
	require.Equal(t, "half_open->closed: probe succeeded", rec.reasons()[len(rec.reasons())-1])
}

func TestMutationIsNeverTheProbeWithFreeSlots(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{HalfOpenProbes: 2})
	trip(t, b)
	fc.Advance(30 * time.Second)
	first, err := b.Allow()
	require.NoError(t, err)
	_, err = b.AllowNoProbe()
	require.ErrorIs(t, err, ErrOpen, "the second slot is free, but not for a mutation")
	second, err := b.Allow()
	require.NoError(t, err)
	first.Success()
	second.Success()
	require.Equal(t, Closed, b.State())
}

func TestProberOwnsHalfOpen(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{Cooldown: time.Minute, CooldownMultiplier: 2})
	require.NoError(t, b.AttachProber(30*time.Second))
	require.True(t, b.HasProber())
	trip(t, b)
	require.Equal(t, 30*time.Second, b.RetryAfter(), "the open period is the probe interval when it is shorter than Cooldown")

	_, err := b.AllowProbe()
	var oe *OpenError
	require.ErrorAs(t, err, &oe, "too early")
	require.Equal(t, 30*time.Second, oe.RetryAfter())

	fc.Advance(30 * time.Second)
	_, err = b.Allow()
	require.ErrorAs(t, err, &oe, "a user's call never probes while a prober is attached")
	require.True(t, oe.WaitsForProbe)
	require.Equal(t, Open, b.State())

	for i := range 3 { // failed probes do not grow the interval
		p, err := b.AllowProbe()
		require.NoError(t, err, "probe %d", i)
		require.True(t, p.IsProbe())
		_, err = b.Allow()
		require.ErrorIs(t, err, ErrOpen)
		_, err = b.AllowProbe()
		require.ErrorIs(t, err, ErrOpen, "one probe at a time")
		p.Failure()
		require.Equal(t, Open, b.State())
		require.Equal(t, 30*time.Second, b.RetryAfter(), "no growth after %d failed probes", i+1)
		fc.Advance(30 * time.Second)
	}
	p, err := b.AllowProbe()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, Closed, b.State())
	r := rec.reasons()
	require.Equal(t, "open->half_open: probe interval elapsed; running the health probe", r[len(r)-2])
	require.Equal(t, "half_open->closed: health probe succeeded", r[len(r)-1])

	_, err = b.AllowProbe()
	require.ErrorIs(t, err, ErrNoProbeNeeded)

	b.DetachProber()
	trip(t, b)
	fc.Advance(time.Minute)
	p, err = b.Allow()
	require.NoError(t, err, "detached: user calls probe again")
	require.True(t, p.IsProbe())
}

func TestProberRespectsRetryAfter(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{})
	require.NoError(t, b.AttachProber(10*time.Second))
	calls(t, b, b.Policy().MinimumCalls-1, Failure)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Report(Report{Verdict: Failure, RetryAfter: 2 * time.Minute})
	require.Equal(t, Open, b.State())
	fc.Advance(time.Minute)
	_, err = b.AllowProbe()
	require.ErrorIs(t, err, ErrOpen, "the dependency asked for two minutes")
	fc.Advance(time.Minute)
	p, err = b.AllowProbe()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, Closed, b.State())
}

func TestAttachProberRefusesBadValues(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{})
	err := b.AttachProber(time.Millisecond)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "maxEvery")
	require.Contains(t, err.Error(), "1ms")
	require.NoError(t, b.AttachProber(time.Second))
	require.Error(t, b.AttachProber(time.Second), "one prober per breaker")
}

func TestForcedOpenIsNotProbed(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{})
	require.NoError(t, b.AttachProber(time.Second))
	b.ForceOpen("maintenance")
	_, err := b.AllowProbe()
	require.ErrorIs(t, err, ErrOpen)
	require.Equal(t, ForcedOpen, b.State())
}

// Exactly one probe is out, whoever races for it: the prober and many user calls.
func TestOneProbeWhileUsersRace(t *testing.T) {
	t.Parallel()
	for _, attached := range []bool{false, true} {
		b, fc, _ := newTest(t, Policy{})
		if attached {
			require.NoError(t, b.AttachProber(30*time.Second))
		}
		trip(t, b)
		fc.Advance(30 * time.Second)
		var probes, userProbes atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				var p Permit
				var err error
				switch i % 3 {
				case 0:
					p, err = b.AllowProbe()
				case 1:
					p, err = b.Allow()
				default:
					p, err = b.AllowNoProbe()
				}
				if err == nil {
					if !p.IsProbe() {
						t.Error("an admitted call is not a probe")
					}
					probes.Add(1)
					if i%3 == 2 {
						t.Error("a mutation took the probe")
					}
					if i%3 != 0 {
						userProbes.Add(1)
					}
				} else if !errors.Is(err, ErrOpen) {
					t.Errorf("unexpected error %v", err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), probes.Load(), "attached=%v", attached)
		if attached {
			require.Zero(t, userProbes.Load(), "a user's call took the probe")
		}
	}
}

func TestAllowNoProbeClosedAllocatesNothing(t *testing.T) {
	b := MustNew(Config{Name: "x"})
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.AllowNoProbe()
		p.Success()
	})
	require.Zero(t, allocs)
}

// A prober that stopped asking hands probing back to user calls after one interval
// and one lease, so a breaker is never left open for good by a dead prober.
func TestAStoppedProberHandsProbingBack(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{ProbeLease: 10 * time.Second})
	require.NoError(t, b.AttachProber(30*time.Second))
	trip(t, b)
	fc.Advance(30*time.Second + 40*time.Second)
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen, "within one interval and one lease the prober owns half-open")
	fc.Advance(time.Second)
	p, err := b.Allow()
	require.NoError(t, err, "the prober is late: a user call probes")
	require.True(t, p.IsProbe())
	p.Success()
	require.Equal(t, Closed, b.State())
}

// The transitions a health probe makes say so (Event.HealthProbe); a user call's
// probe does not.
func TestTransitionsSayWhoseProbeItWas(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{})
	trip(t, b)
	fc.Advance(30 * time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	require.NoError(t, b.AttachProber(30*time.Second))
	fc.Advance(30 * time.Second)
	p, err = b.AllowProbe()
	require.NoError(t, err)
	p.Success()
	var got []string
	for _, e := range rec.all() {
		got = append(got, fmt.Sprintf("%s->%s %s health=%v", e.From, e.To, e.Cause, e.HealthProbe))
	}
	require.Equal(t, []string{
		"closed->open failure_rate health=false",
		"open->half_open cooldown_elapsed health=false",
		"half_open->open probe_failed health=false",
		"open->half_open cooldown_elapsed health=true",
		"half_open->closed probe_succeeded health=true",
	}, got)
}
