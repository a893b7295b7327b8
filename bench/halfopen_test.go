package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
)

// The half-open benchmarks measure a call rejected because the breaker's one probe is
// in flight: each breaker is tripped, its open period runs out, one probe is admitted
// and held (never reported), and then every call in the loop must be rejected. This is
// the thundering-herd moment after a dependency comes back.
//
// Only agentbreaker takes an injected clock. The peers read the wall clock, so they get
// a 1ms open period and setup sleeps until it has passed, before the timer starts.
// None of the peers limits how long a probe may stay out, so holding one is reliable.

// halfOpenAgentbreakerFake returns our breaker on a fake clock, as tests run it, moved
// past its cooldown, with its probe taken.
//
// With an injected clock, Allow reads that clock on every call outside the closed state
// (an interface call and a time.Time subtraction): this variant measures that. See
// halfOpenAgentbreaker for the default clock.
func halfOpenAgentbreakerFake(tb testing.TB) *breaker.Breaker {
	tb.Helper()
	fc := clock.NewFake(time.Time{})
	br := newAgentbreaker(tb, cooldown, fc)
	tripAgentbreaker(tb, br)
	fc.Advance(2 * cooldown) // past the cooldown and its jitter (below 10%)
	takeAgentbreakerProbe(tb, br)
	return br
}

// halfOpenAgentbreaker is our breaker half-open on the default clock, as in
// production: the cooldown is the shortest the policy allows (10ms) and setup waits for
// it. The probe lease is an hour so the held probe cannot run out during a long
// -benchtime.
func halfOpenAgentbreaker(tb testing.TB) *breaker.Breaker {
	return halfOpenAgentbreakerOn(tb, nil)
}

// halfOpenAgentbreakerSystem is halfOpenAgentbreaker given clock.System() explicitly,
// as modelfailover gives its breakers when the user sets no clock.
func halfOpenAgentbreakerSystem(tb testing.TB) *breaker.Breaker {
	return halfOpenAgentbreakerOn(tb, clock.System())
}

func halfOpenAgentbreakerOn(tb testing.TB, clk clock.Clock) *breaker.Breaker {
	tb.Helper()
	p := agentbreakerPolicy(10 * time.Millisecond)
	p.ProbeLease = time.Hour
	br := newAgentbreakerPolicy(tb, p, clk)
	tripAgentbreaker(tb, br)
	var probe breaker.Permit
	waitFor(tb, "agentbreaker's cooldown", func() bool {
		p, err := br.Allow()
		probe = p
		return err == nil
	})
	if !probe.IsProbe() {
		tb.Fatal("agentbreaker admitted an ordinary call, want a probe")
	}
	mustRejectAgentbreaker(tb, br)
	return br
}

func takeAgentbreakerProbe(tb testing.TB, br *breaker.Breaker) {
	tb.Helper()
	p, err := br.Allow()
	if err != nil {
		tb.Fatalf("agentbreaker refused the probe: %v", err)
	}
	if !p.IsProbe() {
		tb.Fatal("agentbreaker admitted an ordinary call, want a probe")
	}
	mustRejectAgentbreaker(tb, br)
}

func mustRejectAgentbreaker(tb testing.TB, br *breaker.Breaker) {
	tb.Helper()
	var oe *breaker.OpenError
	if _, err := br.Allow(); !errors.As(err, &oe) || oe.State != breaker.HalfOpen {
		tb.Fatalf("agentbreaker: second call got %v, want a half-open rejection", err)
	}
}

// halfOpenGobreakerTwoStep returns a two-step gobreaker, half-open, whose one probe
// (MaxRequests 1) was admitted by Allow and whose done callback is never called.
func halfOpenGobreakerTwoStep(tb testing.TB) *gobreaker.TwoStepCircuitBreaker[result] {
	tb.Helper()
	cb := newGobreakerTwoStep(time.Millisecond)
	tripGobreakerTwoStep(tb, cb)
	waitFor(tb, "gobreaker's timeout", func() bool { return cb.State() == gobreaker.StateHalfOpen })
	if _, err := cb.Allow(); err != nil {
		tb.Fatalf("gobreaker refused the probe: %v", err)
	}
	if _, err := cb.Allow(); err != gobreaker.ErrTooManyRequests {
		tb.Fatalf("gobreaker: second call got %v, want ErrTooManyRequests", err)
	}
	return cb
}

// halfOpenGobreaker returns a gobreaker, half-open, whose one probe is an Execute
// blocked in another goroutine until the benchmark's cleanup.
func halfOpenGobreaker(tb testing.TB) *gobreaker.CircuitBreaker[result] {
	tb.Helper()
	cb := newGobreaker(time.Millisecond)
	tripGobreaker(tb, cb)
	waitFor(tb, "gobreaker's timeout", func() bool { return cb.State() == gobreaker.StateHalfOpen })
	entered, release, finished := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_, err := cb.Execute(func() (result, error) {
			close(entered)
			<-release
			return result{}, nil
		})
		finished <- err
	}()
	select {
	case <-entered:
	case err := <-finished:
		tb.Fatalf("gobreaker refused the probe: %v", err)
	}
	tb.Cleanup(func() {
		close(release)
		<-finished
	})
	if _, err := cb.Execute(succeed); err != gobreaker.ErrTooManyRequests {
		tb.Fatalf("gobreaker: second call got %v, want ErrTooManyRequests", err)
	}
	return cb
}

// halfOpenFailsafe returns a failsafe-go breaker, half-open, whose one trial permit
// (WithSuccessThreshold(1)) was taken with TryAcquirePermit and never recorded. The
// executor benchmark uses the same breaker: its PreExecute asks for the same permit.
func halfOpenFailsafe(tb testing.TB) circuitbreaker.CircuitBreaker[result] {
	tb.Helper()
	cb := newFailsafe(time.Millisecond)
	tripFailsafe(tb, cb)
	// The first permit after the delay moves the breaker to half-open and is the probe.
	waitFor(tb, "failsafe-go's delay", cb.TryAcquirePermit)
	if s := cb.State(); s != circuitbreaker.HalfOpenState {
		tb.Fatalf("failsafe-go is %v, want half-open", s)
	}
	if cb.TryAcquirePermit() {
		tb.Fatal("failsafe-go granted a second half-open permit")
	}
	return cb
}

// BenchmarkHalfOpen measures one call rejected while the half-open probe is in flight.
func BenchmarkHalfOpen(b *testing.B) {
	agentbreaker := func(setup func(testing.TB) *breaker.Breaker) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			br := setup(b)
			for b.Loop() {
				if _, err := br.Allow(); err == nil {
					b.Fatal("admitted while the probe is out")
				}
			}
		}
	}
	b.Run("agentbreaker", agentbreaker(halfOpenAgentbreaker))
	b.Run("agentbreaker-systemclock", agentbreaker(halfOpenAgentbreakerSystem))
	b.Run("agentbreaker-fakeclock", agentbreaker(halfOpenAgentbreakerFake))
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenGobreakerTwoStep(b)
		for b.Loop() {
			if _, err := cb.Allow(); err == nil {
				b.Fatal("admitted while the probe is out")
			}
		}
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenGobreaker(b)
		for b.Loop() {
			if _, err := cb.Execute(succeed); err == nil {
				b.Fatal("admitted while the probe is out")
			}
		}
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		exec := failsafe.With(halfOpenFailsafe(b))
		for b.Loop() {
			if _, err := exec.Get(succeed); err == nil {
				b.Fatal("admitted while the probe is out")
			}
		}
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenFailsafe(b)
		for b.Loop() {
			if cb.TryAcquirePermit() {
				b.Fatal("admitted while the probe is out")
			}
		}
	})
}

// BenchmarkHalfOpenParallel is BenchmarkHalfOpen with every goroutine of b.RunParallel
// sharing one breaker: the herd contending for the probe.
func BenchmarkHalfOpenParallel(b *testing.B) {
	agentbreaker := func(setup func(testing.TB) *breaker.Breaker) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			br := setup(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := br.Allow(); err == nil {
						b.Error("admitted while the probe is out")
						return
					}
				}
			})
		}
	}
	b.Run("agentbreaker", agentbreaker(halfOpenAgentbreaker))
	b.Run("agentbreaker-systemclock", agentbreaker(halfOpenAgentbreakerSystem))
	b.Run("agentbreaker-fakeclock", agentbreaker(halfOpenAgentbreakerFake))
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenGobreakerTwoStep(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Allow(); err == nil {
					b.Error("admitted while the probe is out")
					return
				}
			}
		})
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenGobreaker(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Execute(succeed); err == nil {
					b.Error("admitted while the probe is out")
					return
				}
			}
		})
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		exec := failsafe.With(halfOpenFailsafe(b))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := exec.Get(succeed); err == nil {
					b.Error("admitted while the probe is out")
					return
				}
			}
		})
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := halfOpenFailsafe(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if cb.TryAcquirePermit() {
					b.Error("admitted while the probe is out")
					return
				}
			}
		})
	})
}
