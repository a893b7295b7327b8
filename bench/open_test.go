package bench

import (
	"testing"

	"github.com/failsafe-go/failsafe-go"
)

// BenchmarkOpen measures one rejected call. Each breaker is tripped by failures (not
// forced open) with an open period of an hour, so it stays open throughout.
func BenchmarkOpen(b *testing.B) {
	b.Run("agentbreaker", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, longCooldown, nil)
		tripAgentbreaker(b, br)
		for b.Loop() {
			if _, err := br.Allow(); err == nil {
				b.Fatal("admitted while open")
			}
		}
	})
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreakerTwoStep(longCooldown)
		tripGobreakerTwoStep(b, cb)
		for b.Loop() {
			if _, err := cb.Allow(); err == nil {
				b.Fatal("admitted while open")
			}
		}
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreaker(longCooldown)
		tripGobreaker(b, cb)
		for b.Loop() {
			if _, err := cb.Execute(succeed); err == nil {
				b.Fatal("admitted while open")
			}
		}
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(longCooldown)
		tripFailsafe(b, cb)
		exec := failsafe.With(cb)
		for b.Loop() {
			if _, err := exec.Get(succeed); err == nil {
				b.Fatal("admitted while open")
			}
		}
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(longCooldown)
		tripFailsafe(b, cb)
		for b.Loop() {
			if cb.TryAcquirePermit() {
				b.Fatal("admitted while open")
			}
		}
	})
}

// BenchmarkOpenParallel is BenchmarkOpen with every goroutine of b.RunParallel sharing
// one breaker.
func BenchmarkOpenParallel(b *testing.B) {
	b.Run("agentbreaker", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, longCooldown, nil)
		tripAgentbreaker(b, br)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := br.Allow(); err == nil {
					b.Error("admitted while open")
					return
				}
			}
		})
	})
	b.Run("gobreaker-twostep", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreakerTwoStep(longCooldown)
		tripGobreakerTwoStep(b, cb)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Allow(); err == nil {
					b.Error("admitted while open")
					return
				}
			}
		})
	})
	b.Run("gobreaker-execute", func(b *testing.B) {
		b.ReportAllocs()
		cb := newGobreaker(longCooldown)
		tripGobreaker(b, cb)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cb.Execute(succeed); err == nil {
					b.Error("admitted while open")
					return
				}
			}
		})
	})
	b.Run("failsafe-executor", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(longCooldown)
		tripFailsafe(b, cb)
		exec := failsafe.With(cb)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := exec.Get(succeed); err == nil {
					b.Error("admitted while open")
					return
				}
			}
		})
	})
	b.Run("failsafe-permit", func(b *testing.B) {
		b.ReportAllocs()
		cb := newFailsafe(longCooldown)
		tripFailsafe(b, cb)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if cb.TryAcquirePermit() {
					b.Error("admitted while open")
					return
				}
			}
		})
	})
}
