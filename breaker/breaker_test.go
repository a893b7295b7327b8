package breaker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

func TestStateStrings(t *testing.T) {
	t.Parallel()
	want := map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open",
		ForcedOpen: "forced_open", ForcedClosed: "forced_closed", State(9): "invalid"}
	for s, name := range want {
		require.Equal(t, name, s.String())
	}
	require.Equal(t, "failure_rate", CauseFailureRate.String())
	require.Equal(t, "operator", CauseOperator.String())
	require.Equal(t, "unknown", Cause(0).String())
}

func TestVolumeGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		successes int
		failures  int
		wantState State
	}{
		{name: "five of five is below the volume gate", failures: 5, wantState: Closed},
		{name: "nineteen of nineteen is below the volume gate", failures: 19, wantState: Closed},
		{name: "five of fifty thousand is below the rate gate", successes: 49_995, failures: 5, wantState: Closed},
		{name: "ten of twenty meets both gates", successes: 10, failures: 10, wantState: Open},
		{name: "nine of twenty is below the rate", successes: 11, failures: 9, wantState: Closed},
		{name: "twenty of twenty trips", failures: 20, wantState: Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := newTest(t, Policy{})
			calls(t, b, tt.successes, Success)
			for range tt.failures {
				if b.State() != Closed {
					break
				}
				call(t, b, Failure)
			}
			require.Equal(t, tt.wantState, b.State())
		})
	}
}

func TestRateThresholdIsExact(t *testing.T) {
	t.Parallel()
	// 0.3 × 10 is 3.0000000000000004 in floating point; three failures in ten calls
	// must still reach a 30% threshold.
	b, _, _ := newTest(t, Policy{FailureRateThreshold: 0.3, MinimumCalls: 10})
	calls(t, b, 7, Success)
	calls(t, b, 2, Failure)
	require.Equal(t, Closed, b.State())
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
}

func TestTripEventSaysWhy(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{})
	calls(t, b, 8, Success)
	calls(t, b, 12, Failure)
	require.Equal(t, Open, b.State())
	events := rec.all()
	require.Len(t, events, 1)
	e := events[0]
	require.Equal(t, "failure rate 60% over 20 calls ≥ 50%", e.Reason)
	require.Equal(t, CauseFailureRate, e.Cause)
	require.Equal(t, Closed, e.From)
	require.Equal(t, Open, e.To)
	require.Equal(t, "crm", e.Breaker)
	require.Equal(t, fc.Now(), e.At)
	require.Equal(t, fc.Now().Add(30*time.Second), e.ReopenAt)
	require.Equal(t, Counts{Calls: 20, Failures: 12}, e.Window)
}

func TestWindowSlides(t *testing.T) {
	t.Parallel()
	// 60s window of 10 buckets: failures older than the window stop counting.
	b, fc, _ := newTest(t, Policy{})
	calls(t, b, 15, Failure)
	fc.Advance(30 * time.Second)
	calls(t, b, 4, Failure)
	require.Equal(t, Counts{Calls: 19, Failures: 19}, b.Snapshot().Window)
	fc.Advance(31 * time.Second) // the first 15 fall out
	require.Equal(t, Counts{Calls: 4, Failures: 4}, b.Snapshot().Window, "a snapshot slides the window to now")
	call(t, b, Failure)
	require.Equal(t, Closed, b.State(), "only 5 failures are inside the window")
	require.Equal(t, Counts{Calls: 5, Failures: 5}, b.Snapshot().Window)
	fc.Advance(10 * time.Minute)
	require.Equal(t, Counts{}, b.Snapshot().Window, "a quiet dependency's window empties with time")
	calls(t, b, 3, Success)
	require.Equal(t, Counts{Calls: 3}, b.Snapshot().Window, "a long gap empties the window")
}

func TestLongWindowLetsLowTrafficTrip(t *testing.T) {
	t.Parallel()
	// A tool called twice a minute: a 20-minute window still sees 20 calls.
	b, fc, _ := newTest(t, Policy{Window: 20 * time.Minute, Buckets: 20, MinimumCalls: 20})
	for range 19 {
		call(t, b, Failure)
		fc.Advance(30 * time.Second)
	}
	require.Equal(t, Closed, b.State())
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
}

func TestOpenRejectsWithTypedError(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{})
	trip(t, b)
	fc.Advance(10 * time.Second)
	p, err := b.Allow()
	require.False(t, p.Valid())
	require.ErrorIs(t, err, ErrOpen)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "crm", oe.Breaker)
	require.Equal(t, Open, oe.State)
	require.Equal(t, 20*time.Second, oe.RetryAfter())
	require.Equal(t, "breaker_open", oe.RejectedLocally())
	require.Equal(t, 20*time.Second, b.RetryAfter())
	require.EqualValues(t, 20, b.RetryAfterSeconds())
	require.Contains(t, err.Error(), "crm is open until")
}

func TestHalfOpenProbeDecides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		verdict Verdict
		want    State
		reason  string
	}{
		{name: "success closes", verdict: Success, want: Closed, reason: "half_open->closed: probe succeeded"},
		{name: "failure reopens", verdict: Failure, want: Open, reason: "half_open->open: probe failed"},
		{name: "ignored probe frees its slot", verdict: Ignore, want: HalfOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, fc, rec := newTest(t, Policy{})
			trip(t, b)
			fc.Advance(30 * time.Second)
			probe, err := b.Allow()
			require.NoError(t, err)
			require.True(t, probe.IsProbe())
			require.Equal(t, HalfOpen, b.State())
			_, err = b.Allow()
			require.ErrorIs(t, err, ErrOpen, "a second caller is rejected while the probe is out")
			probe.Report(Report{Verdict: tt.verdict})
			require.Equal(t, tt.want, b.State())
			if tt.reason != "" {
				reasons := rec.reasons()
				require.Equal(t, tt.reason, reasons[len(reasons)-1])
			}
			if tt.verdict == Ignore {
				// Regression: with a free slot, RetryAfter once overflowed to 292 years.
				require.Zero(t, b.RetryAfter())
				next, err := b.Allow()
				require.NoError(t, err, "an ignored probe lets the next caller probe")
				require.True(t, next.IsProbe())
			}
			if tt.verdict == Failure {
				require.Equal(t, 30*time.Second, b.RetryAfter(), "a failed probe starts a fresh cooldown")
			}
		})
	}
}

func TestSeveralProbesMustAllSucceed(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{HalfOpenProbes: 3})
	trip(t, b)
	fc.Advance(30 * time.Second)
	var probes []Permit
	for range 3 {
		p, err := b.Allow()
		require.NoError(t, err)
		probes = append(probes, p)
	}
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen)
	probes[0].Success()
	_, err = b.Allow()
	require.ErrorIs(t, err, ErrOpen, "a finished probe does not let a fourth one through")
	probes[1].Success()
	require.Equal(t, HalfOpen, b.State())
	probes[2].Success()
	require.Equal(t, Closed, b.State())
	reasons := rec.reasons()
	require.Equal(t, "half_open->closed: all 3 probes succeeded", reasons[len(reasons)-1])
}

func TestProbeLeaseExpires(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{ProbeLease: 10 * time.Second})
	trip(t, b)
	fc.Advance(30 * time.Second)
	lost, err := b.Allow() // this caller crashes and never reports
	require.NoError(t, err)
	fc.Advance(9 * time.Second)
	_, err = b.Allow()
	require.ErrorIs(t, err, ErrOpen)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, HalfOpen, oe.State)
	require.Equal(t, time.Second, oe.RetryAfter())
	fc.Advance(time.Second)
	next, err := b.Allow()
	require.NoError(t, err, "the lease ran out: another probe may go")
	require.True(t, next.IsProbe())
	require.EqualValues(t, 1, b.Snapshot().ExpiredProbes)
	lost.Failure() // the lost probe finally reports: its slot is gone, so it is dropped
	require.Equal(t, HalfOpen, b.State())
	next.Success()
	require.Equal(t, Closed, b.State())
}

func TestCooldownGrowsAndCaps(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{Cooldown: 10 * time.Second, CooldownMultiplier: 2, MaxCooldown: 50 * time.Second})
	trip(t, b)
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, w := range want {
		require.Equal(t, w*time.Second, b.RetryAfter(), "open period %d", i)
		fc.Advance(w * time.Second)
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	// A success forgets the growth.
	fc.Advance(50 * time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Success()
	trip(t, b)
	require.Equal(t, 10*time.Second, b.RetryAfter())
}

func TestJitterStretchesCooldown(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "j", Clock: fc, Policy: Policy{Jitter: 0.2}, Rand: func() float64 { return 0.5 }})
	trip(t, b)
	require.Equal(t, 33*time.Second, b.RetryAfter(), "30s stretched by 0.2 × 0.5")
}

func TestRetryAfterIsAFloorThatOnlyMovesLater(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{MinimumCalls: 1})
	p, err := b.Allow()
	require.NoError(t, err)
	late, err := b.Allow() // in flight when the breaker trips
	require.NoError(t, err)
	p.Report(Report{Verdict: Failure, RetryAfter: 40 * time.Second})
	require.Equal(t, Open, b.State())
	require.Equal(t, 40*time.Second, b.RetryAfter(), "the server's 40s beats the 30s cooldown")
	require.Contains(t, rec.reasons()[0], "; retry-after 40s")

	fc.Advance(10 * time.Second)
	late.Report(Report{Verdict: Failure, RetryAfter: 5 * time.Second})
	require.Equal(t, 30*time.Second, b.RetryAfter(), "a shorter delay never moves the reopen time earlier")

	late2, err := b.AllowAt(fc.Now().Add(-time.Hour)) // granted long ago in another generation? no: rejected
	require.Error(t, err)
	require.False(t, late2.Valid())

	fc.Advance(20 * time.Second)
	probe, err := b.Allow()
	require.NoError(t, err)
	probe.Report(Report{Verdict: Failure, RetryAfter: 2 * time.Hour})
	require.Equal(t, 15*time.Minute, b.RetryAfter(), "a server-stated delay is capped by MaxRetryAfter")
}

func TestStaleRetryAfterExtendsOpenBreaker(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{MinimumCalls: 1})
	inflight, err := b.Allow()
	require.NoError(t, err)
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
	fc.Advance(5 * time.Second)
	inflight.Report(Report{Verdict: Failure, RetryAfter: time.Minute})
	require.Equal(t, time.Minute, b.RetryAfter())
	events := rec.all()
	require.Len(t, events, 2)
	require.Equal(t, CauseRetryAfter, events[1].Cause)
	require.Equal(t, Open, events[1].From)
	require.Equal(t, Open, events[1].To)
	require.Equal(t, "retry-after 1m0s", events[1].Reason)
}

func TestStaleReportsAreDropped(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 4})
	var old []Permit
	for range 4 {
		p, err := b.Allow()
		require.NoError(t, err)
		old = append(old, p)
	}
	trip(t, b)
	fc.Advance(30 * time.Second)
	probe, err := b.Allow()
	require.NoError(t, err)
	probe.Success()
	require.Equal(t, Closed, b.State())
	for i := range old {
		old[i].Failure() // reports from before the trip
	}
	require.Equal(t, Closed, b.State())
	require.Equal(t, Counts{}, b.Snapshot().Window)
}

func TestReportTwiceOrNever(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{MinimumCalls: 2})
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	p.Failure()
	p.Success()
	require.Equal(t, Counts{Calls: 1, Failures: 1}, b.Snapshot().Window)
	require.Equal(t, Closed, b.State())
	for range 100 {
		_, err := b.Allow() // never reported
		require.NoError(t, err)
	}
	require.Equal(t, Counts{Calls: 1, Failures: 1}, b.Snapshot().Window)
	var zero Permit
	zero.Success() // a rejected (zero) permit may report too
	zero.Failure()
	require.False(t, zero.Valid())
}

func TestIgnoredCallsAreNotMeasured(t *testing.T) {
	t.Parallel()
	b, _, _ := newTest(t, Policy{})
	calls(t, b, 50, Ignore)
	calls(t, b, 5, Failure)
	require.Equal(t, Counts{Calls: 5, Failures: 5}, b.Snapshot().Window)
	require.Equal(t, Closed, b.State())
}

func TestSlowCallGate(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{SlowCallThreshold: 2 * time.Second, SlowCallRateThreshold: 0.5, MinimumCalls: 10})
	slowCall := func(d time.Duration, v Verdict) {
		p, err := b.Allow()
		require.NoError(t, err)
		fc.Advance(d)
		p.Report(Report{Verdict: v})
	}
	for range 5 {
		slowCall(10*time.Millisecond, Success)
	}
	for range 4 {
		slowCall(3*time.Second, Success)
	}
	require.Equal(t, Closed, b.State())
	require.Equal(t, Counts{Calls: 9, SlowCalls: 4}, b.Snapshot().Window)
	slowCall(2*time.Second, Success) // at the threshold counts as slow: 5 of 10
	require.Equal(t, Open, b.State())
	require.Equal(t, Counts{Calls: 10, SlowCalls: 5}, b.Snapshot().Window)
	require.Equal(t, "closed->open: slow-call rate 50% over 10 calls ≥ 50% (slow means ≥ 2s)", rec.reasons()[0])
}

func TestSlowProbeCountsAsFailed(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{SlowCallThreshold: time.Second, MinimumCalls: 1})
	call(t, b, Failure)
	fc.Advance(30 * time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	fc.Advance(1500 * time.Millisecond)
	p.Success()
	require.Equal(t, Open, b.State())
	reasons := rec.reasons()
	require.Equal(t, "half_open->open: probe too slow (1.5s ≥ 1s)", reasons[len(reasons)-1])
}

func TestOperatorOverrides(t *testing.T) {
	t.Parallel()
	b, fc, rec := newTest(t, Policy{MinimumCalls: 5})
	b.ForceOpen("deploy in progress")
	_, err := b.Allow()
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, ForcedOpen, oe.State)
	require.Zero(t, oe.RetryAfter())
	require.Zero(t, b.RetryAfter())
	fc.Advance(time.Hour)
	_, err = b.Allow()
	require.ErrorIs(t, err, ErrOpen, "forced open does not time out")

	b.ForceClosed("")
	calls(t, b, 50, Failure)
	require.Equal(t, ForcedClosed, b.State(), "forced closed never trips")
	require.Equal(t, Counts{Calls: 50, Failures: 50}, b.Snapshot().Window, "but keeps measuring")

	b.Reset("incident over")
	require.Equal(t, Closed, b.State())
	require.Equal(t, Counts{}, b.Snapshot().Window)
	require.Equal(t, []string{
		"closed->forced_open: forced open by operator: deploy in progress",
		"forced_open->forced_closed: forced closed by operator",
		"forced_closed->closed: reset by operator: incident over",
	}, rec.reasons())
	for _, e := range rec.all() {
		require.Equal(t, CauseOperator, e.Cause)
	}
}

func TestClockJumpingBackDoesNotWedge(t *testing.T) {
	t.Parallel()
	b, fc, _ := newTest(t, Policy{MinimumCalls: 1})
	call(t, b, Failure)
	fc.Advance(-6 * time.Hour) // an injected wall clock stepped back
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen)
	require.Equal(t, 30*time.Second, b.RetryAfter(), "the wait is clamped to the cooldown that was set")
	fc.Advance(30 * time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Success()
	require.Equal(t, Closed, b.State())
	call(t, b, Success)
	fc.Advance(-time.Minute)
	call(t, b, Success) // the window does not slide backwards
	require.Equal(t, Counts{Calls: 2}, b.Snapshot().Window)
}

func TestListenersMayUseTheBreaker(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	var b *Breaker
	var seen []string
	listener := func(e Event) {
		// Reading and operating the breaker from a listener must not deadlock.
		s := b.Snapshot()
		seen = append(seen, fmt.Sprintf("%s/%s", e.To, s.State))
		if e.To == Open {
			b.ForceOpen("escalated")
		}
	}
	b = MustNew(Config{Name: "x", Clock: fc, Policy: Policy{MinimumCalls: 1, Jitter: -1}, OnStateChange: []func(Event){listener}})
	call(t, b, Failure)
	require.Equal(t, ForcedOpen, b.State())
	require.Equal(t, []string{"open/open", "forced_open/forced_open"}, seen)
}

func TestListenerPanicDoesNotStopLaterDeliveries(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	n := 0
	b := MustNew(Config{Name: "x", Clock: fc, OnStateChange: []func(Event){func(Event) {
		n++
		if n == 1 {
			panic("listener bug")
		}
	}}})
	require.PanicsWithValue(t, "listener bug", func() { b.ForceOpen("") })
	b.Reset("")
	require.Equal(t, 2, n)
}

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"missing name", Config{}, `breaker: Name = "": is required`},
		{"rate above one", Config{Name: "a", Policy: Policy{FailureRateThreshold: 1.5}}, "breaker: Policy.FailureRateThreshold = 1.5: must be in (0, 1]"},
		{"negative rate", Config{Name: "a", Policy: Policy{FailureRateThreshold: -0.1}}, "Policy.FailureRateThreshold = -0.1"},
		{"negative volume", Config{Name: "a", Policy: Policy{MinimumCalls: -3}}, "breaker: Policy.MinimumCalls = -3: must be at least 1"},
		{"short window", Config{Name: "a", Policy: Policy{Window: 500 * time.Millisecond}}, "breaker: Policy.Window = 500ms: must be between 1s and 1h"},
		{"long window", Config{Name: "a", Policy: Policy{Window: 2 * time.Hour}}, "Policy.Window = 2h0m0s"},
		{"tiny buckets", Config{Name: "a", Policy: Policy{Window: time.Second, Buckets: 60}}, "breaker: Policy.Buckets = 60: makes buckets shorter than 50ms for a window of 1s"},
		{"too many buckets", Config{Name: "a", Policy: Policy{Buckets: 61}}, "Policy.Buckets = 61: must be between 1 and 60"},
		{"slow threshold", Config{Name: "a", Policy: Policy{SlowCallThreshold: time.Microsecond}}, "Policy.SlowCallThreshold = 1µs"},
		{"short cooldown", Config{Name: "a", Policy: Policy{Cooldown: time.Millisecond}}, "Policy.Cooldown = 1ms"},
		{"multiplier", Config{Name: "a", Policy: Policy{CooldownMultiplier: 0.5}}, "Policy.CooldownMultiplier = 0.5: must be between 1 and 10"},
		{"max below cooldown", Config{Name: "a", Policy: Policy{Cooldown: time.Minute, MaxCooldown: time.Second}}, "Policy.MaxCooldown = 1s: must be between Cooldown (1m0s) and 24h"},
		{"jitter", Config{Name: "a", Policy: Policy{Jitter: 1}}, "Policy.Jitter = 1"},
		{"probes", Config{Name: "a", Policy: Policy{HalfOpenProbes: 101}}, "Policy.HalfOpenProbes = 101"},
		{"lease", Config{Name: "a", Policy: Policy{ProbeLease: time.Millisecond}}, "Policy.ProbeLease = 1ms"},
		{"retry-after cap", Config{Name: "a", Policy: Policy{MaxRetryAfter: time.Millisecond}}, "Policy.MaxRetryAfter = 1ms"},
		{"nil listener", Config{Name: "a", OnStateChange: []func(Event){nil}}, "breaker: OnStateChange[0] = nil: listener is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := New(tt.cfg)
			require.Nil(t, b)
			require.ErrorContains(t, err, tt.wantErr)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce))
		})
	}
	require.Panics(t, func() { MustNew(Config{}) })
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	p := Policy{}.WithDefaults()
	require.NoError(t, p.Validate())
	require.Equal(t, Policy{
		FailureRateThreshold: 0.5, MinimumCalls: 20, Window: time.Minute, Buckets: 10,
		SlowCallRateThreshold: 0.5, Cooldown: 30 * time.Second, CooldownMultiplier: 1,
		MaxCooldown: 5 * time.Minute, Jitter: 0.1, HalfOpenProbes: 1, ProbeLease: 30 * time.Second,
		MaxRetryAfter: 15 * time.Minute,
	}, p)
}

func TestSystemClockBreaker(t *testing.T) {
	t.Parallel()
	// The default clock: no fake, the coarse system clock. Nothing here waits.
	b := MustNew(Config{Name: "sys", Policy: Policy{MinimumCalls: 2, Cooldown: time.Hour}})
	call(t, b, Success)
	require.Equal(t, Closed, b.State(), "one call is below the volume gate")
	call(t, b, Failure)
	require.Equal(t, Open, b.State(), "one failure in two calls meets 50%")
	d := b.RetryAfter()
	require.Greater(t, d, 59*time.Minute)
	require.LessOrEqual(t, d, 66*time.Minute+time.Second) // 1h plus at most 10% jitter
}

func TestOpenedAtAtTheEpochInstant(t *testing.T) {
	t.Parallel()
	// Regression: a breaker that opened at the very instant it was created reported a
	// zero OpenedAt, because 0 doubled as "never opened".
	b, fc, _ := newTest(t, Policy{MinimumCalls: 1})
	require.True(t, b.Snapshot().OpenedAt.IsZero(), "never opened")
	call(t, b, Failure)
	require.Equal(t, fc.Now(), b.Snapshot().OpenedAt)
}
