package bench

import (
	"testing"

	"github.com/failsafe-go/failsafe-go"
)

// BenchmarkClosed measures one admitted call reported successful, in the closed state:
// the cost every healthy call pays.
func BenchmarkClosed(b *testing.B) {
	b.Run("agentbreaker", benchAgentbreakerClosed)
	b.Run("agentbreaker-countwindow", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreakerPolicy(b, countWindowPolicy(cooldown), nil)
		for b.Loop() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Success()
		}
	})
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreakerTwoStep(cooldown)
		for b.Loop() {
			done, err := cb.Allow()
			if err != nil {
				b.Fatal(err)
			}
			done(nil)
		}
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreaker(cooldown)
		for b.Loop() {
			if _, err := cb.Execute(succeed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		exec := failsafe.With(newFailsafe(cooldown))
		for b.Loop() {
			if _, err := exec.Get(succeed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(cooldown)
		for b.Loop() {
			if !cb.TryAcquirePermit() {
				b.Fatal("no permit")
			}
			cb.RecordSuccess()
		}
	})
}

// BenchmarkClosedParallel is BenchmarkClosed with every goroutine of b.RunParallel
// sharing one breaker.
func BenchmarkClosedParallel(b *testing.B) {
	b.Run("agentbreaker", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, cooldown, nil)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := br.Allow()
				if err != nil {
					b.Error(err)
					return
				}
				p.Success()
			}
		})
	})
	b.Run("agentbreaker-countwindow", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreakerPolicy(b, countWindowPolicy(cooldown), nil)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := br.Allow()
				if err != nil {
					b.Error(err)
					return
				}
				p.Success()
			}
		})
	})
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreakerTwoStep(cooldown)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				done, err := cb.Allow()
				if err != nil {
					b.Error(err)
					return
				}
				done(nil)
			}
		})
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreaker(cooldown)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Execute(succeed); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		exec := failsafe.With(newFailsafe(cooldown))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := exec.Get(succeed); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(cooldown)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !cb.TryAcquirePermit() {
					b.Error("no permit")
					return
				}
				cb.RecordSuccess()
			}
		})
	})
}

// benchAgentbreakerClosed is agentbreaker's closed path: Allow, then the permit's
// success. BenchmarkThrottle runs it too, as the baseline of the throttle's cost.
func benchAgentbreakerClosed(b *testing.B) {
	b.ReportAllocs()
	br := newAgentbreaker(b, cooldown, nil)
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Success()
	}
}
