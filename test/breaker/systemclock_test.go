package breaker_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// minCooldown is the shortest Cooldown the policy accepts ("From 10ms to 24h").
const minCooldown = 10 * time.Millisecond

// systemPolicy trips on 50% failures over at least four calls, waits the shortest
// cooldown without jitter, and lets one probe through with a lease far longer than the
// test, so that a second probe can only come from a broken half-open gate.
func systemPolicy() breaker.Policy {
	return breaker.Policy{
		FailureRateThreshold: 0.5,
		MinimumCalls:         4,
		Cooldown:             minCooldown,
		Jitter:               -1,
		HalfOpenProbes:       1,
		ProbeLease:           time.Hour,
	}
}

// TestMinimumCooldownIsAccepted checks the documented range of Policy.Cooldown
// ("From 10ms to 24h"): 10ms is valid and a shorter one is refused with a
// *ConfigError. The system-clock tests below rely on 10ms being the minimum.
func TestMinimumCooldownIsAccepted(t *testing.T) {
	p := systemPolicy()
	if err := p.WithDefaults().Validate(); err != nil {
		t.Fatalf("Cooldown %v refused: %v", minCooldown, err)
	}
	if _, err := breaker.New(breaker.Config{Name: "min", Policy: p}); err != nil {
		t.Fatalf("New with Cooldown %v: %v", minCooldown, err)
	}
	p.Cooldown = minCooldown - time.Millisecond
	_, err := breaker.New(breaker.Config{Name: "below-min", Policy: p})
	var ce *breaker.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New with Cooldown %v: got %v, want a *ConfigError", p.Cooldown, err)
	}
}

// TestSystemClockIsTheDefaultClock checks Config.Clock's promise "clock.System is the
// same as nil": a breaker on clock.System() and one with no clock both
//   - stay closed below the volume gate (MinimumCalls 4) and trip on the call that
//     crosses it with a failure rate of 75% ≥ 50%;
//   - reject while open with an *OpenError naming the breaker and the open state, that
//     unwraps to ErrOpen, whose Until is Cooldown after the trip on the system's time
//     (as time.Now reads it), and record OpenedAt on that time too;
//   - after the cooldown (the minimum, 10ms), let exactly one probe through however
//     many goroutines race in Allow, and no ordinary call, and reject the rest with
//     ErrOpen (half-open with its probe out);
//   - close on the probe's success, with the window emptied, and admit calls again.
//
// It fails if either clock never ends the cooldown (the bounded wait for the probe),
// ends it early (a probe admitted less than Cooldown after the trip, measured from
// before the tripping report), hands out two probes or an ordinary permit while
// half-open, or does not close on the probe's success.
func TestSystemClockIsTheDefaultClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		clk  clock.Clock
	}{
		{"nil", nil},
		{"System", clock.System()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkSystemClockLifecycle(t, tc.clk)
		})
	}
}

// checkOpenError checks a rejection: an *OpenError that unwraps to ErrOpen, names the
// breaker and one of the rejecting states in want. It returns a description of what is
// wrong, or "" (it is called from several goroutines, so it does not fail the test).
func checkOpenError(err error, name string, want ...breaker.State) string {
	if !errors.Is(err, breaker.ErrOpen) {
		return "rejection " + err.Error() + " does not unwrap to ErrOpen"
	}
	var oe *breaker.OpenError
	if !errors.As(err, &oe) {
		return "rejection " + err.Error() + " is not an *OpenError"
	}
	if oe.Breaker != name {
		return "OpenError.Breaker = " + oe.Breaker + ", want " + name
	}
	for _, s := range want {
		if oe.State == s {
			return ""
		}
	}
	return "OpenError.State = " + oe.State.String() + ", not a rejecting state expected here"
}

func checkSystemClockLifecycle(t *testing.T, clk clock.Clock) {
	const name = "sysdep"
	b, err := breaker.New(breaker.Config{Name: name, Clock: clk, Policy: systemPolicy()})
	if err != nil {
		t.Fatal(err)
	}

	// Volume gate: a success then two failures, 67% over 3 calls, are below MinimumCalls 4.
	for i := 0; i < 3; i++ {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("closed breaker rejected call %d: %v", i, err)
		}
		if p.IsProbe() {
			t.Fatalf("closed breaker handed out a probe")
		}
		if i == 0 {
			p.Success()
		} else {
			p.Failure()
		}
	}
	if s := b.State(); s != breaker.Closed {
		t.Fatalf("after 3 calls under a gate of 4: state %v, want closed", s)
	}
	// The fourth call, a failure, makes 75% over 4 calls: the breaker trips. (A trip by
	// a success is checked by TestTripBySuccessReadsThePreciseClock.)
	p, err := b.Allow()
	if err != nil {
		t.Fatalf("closed breaker rejected the 4th call: %v", err)
	}
	tripStart := time.Now() // before the tripping report: the cooldown starts no earlier
	p.Failure()
	if s := b.State(); s != breaker.Open {
		t.Fatalf("after a success and three failures under a gate of 4: state %v, want open", s)
	}

	// An immediate call is rejected. On a loaded machine the 10ms cooldown may already
	// be over; then the call is the probe (which must not come early) and failing it
	// reopens the breaker for a fresh cooldown, so try again.
	rejected := false
	for attempt := 0; attempt < 20 && !rejected; attempt++ {
		p, err := b.Allow()
		if err != nil {
			if msg := checkOpenError(err, name, breaker.Open); msg != "" {
				t.Fatal(msg)
			}
			var oe *breaker.OpenError
			errors.As(err, &oe)
			if ra := oe.RetryAfter(); ra < 0 || ra > minCooldown {
				t.Fatalf("OpenError.RetryAfter() = %v, want within [0, %v] (no jitter)", ra, minCooldown)
			}
			// Until and OpenedAt are instants of the system's time, as time.Now reads it:
			// the trip happened between tripStart and now, and Until is Cooldown later.
			now := time.Now()
			if oe.Until.Before(tripStart.Add(minCooldown)) || oe.Until.After(now.Add(minCooldown)) {
				t.Fatalf("OpenError.Until = %v, want Cooldown after a trip between %v and %v", oe.Until, tripStart, now)
			}
			if opened := b.Snapshot().OpenedAt; opened.Before(tripStart) || opened.After(now) {
				t.Fatalf("Snapshot.OpenedAt = %v, want between %v and %v", opened, tripStart, now)
			}
			rejected = true
			break
		}
		if waited := time.Since(tripStart); waited < minCooldown {
			t.Fatalf("open breaker admitted a call %v after the trip, before its %v cooldown", waited, minCooldown)
		}
		if !p.IsProbe() {
			t.Fatalf("the first call after the cooldown is not a probe")
		}
		tripStart = time.Now()
		p.Failure()
		if s := b.State(); s != breaker.Open {
			t.Fatalf("after a failed probe: state %v, want open", s)
		}
	}
	if !rejected {
		t.Fatalf("the open breaker never rejected a call made right after it opened")
	}

	// Many goroutines race in Allow across the end of the cooldown. The probe is not
	// reported until they all stop, so exactly one probe may be handed out (its lease
	// is an hour), and no ordinary permit.
	const goroutines = 8
	var (
		stop        atomic.Bool
		probes      atomic.Int64
		ordinary    atomic.Int64
		rejections  atomic.Int64
		wrongErr    atomic.Pointer[string]
		probeAt     time.Time
		probeMu     sync.Mutex
		probePermit = make(chan *breaker.Permit, 1)
		start       = make(chan struct{})
		wg          sync.WaitGroup
	)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for !stop.Load() {
				p, err := b.Allow()
				if err != nil {
					rejections.Add(1)
					if msg := checkOpenError(err, name, breaker.Open, breaker.HalfOpen); msg != "" {
						wrongErr.CompareAndSwap(nil, &msg)
					}
					continue
				}
				if !p.IsProbe() {
					ordinary.Add(1)
					p.Ignore()
					continue
				}
				if probes.Add(1) == 1 {
					probeMu.Lock()
					probeAt = time.Now()
					probeMu.Unlock()
				}
				pp := new(breaker.Permit)
				*pp = p
				select {
				case probePermit <- pp:
				default: // only the first probe is reported; a second one is a failure anyway
				}
			}
		}()
	}
	close(start)

	var probe *breaker.Permit
	select {
	case probe = <-probePermit:
	case <-time.After(pollBound):
		stop.Store(true)
		wg.Wait()
		t.Fatalf("no probe within %v of a %v cooldown (%d rejections)", pollBound, minCooldown, rejections.Load())
	}
	// Keep the goroutines racing for a while after the probe went out: any of them
	// could wrongly get a second probe or an ordinary permit.
	base := rejections.Load()
	deadline := time.Now().Add(pollBound)
	for rejections.Load() < base+20000 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	if s := b.State(); s != breaker.HalfOpen {
		t.Errorf("with its probe out: state %v, want half_open", s)
	}
	if snap := b.Snapshot(); snap.ProbesInFlight != 1 {
		t.Errorf("with its probe out: Snapshot.ProbesInFlight = %d, want 1", snap.ProbesInFlight)
	}
	stop.Store(true)
	wg.Wait()

	if msg := wrongErr.Load(); msg != nil {
		t.Errorf("a racing caller got a wrong rejection: %s", *msg)
	}
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d goroutines racing in Allow got %d probes, want exactly 1 (HalfOpenProbes 1)", goroutines, n)
	}
	if n := ordinary.Load(); n != 0 {
		t.Fatalf("a half-open breaker admitted %d ordinary (non-probe) calls", n)
	}
	if waited := probeAt.Sub(tripStart); waited < minCooldown {
		t.Fatalf("probe admitted %v after the trip, before the %v cooldown ended", waited, minCooldown)
	}
	if rejections.Load() <= base {
		t.Fatalf("no call was rejected while the probe was out")
	}

	// The probe's success closes the breaker with its window emptied.
	probe.Success()
	if s := b.State(); s != breaker.Closed {
		t.Fatalf("after the probe's success: state %v, want closed", s)
	}
	if snap := b.Snapshot(); snap.State != breaker.Closed || snap.Window != (breaker.Counts{}) {
		t.Fatalf("after the probe's success: snapshot state %v window %+v, want closed and empty", snap.State, snap.Window)
	}
	p, err = b.Allow()
	if err != nil {
		t.Fatalf("closed breaker rejected a call: %v", err)
	}
	if p.IsProbe() {
		t.Fatalf("closed breaker handed out a probe")
	}
	p.Success()
	if snap := b.Snapshot(); snap.Window.Calls != 1 || snap.Window.Failures != 0 {
		t.Fatalf("after one success on the closed breaker: window %+v, want 1 call, 0 failures", snap.Window)
	}
}
