package bench

import (
	"testing"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"

	"github.com/agentbreaker/agentbreaker/throttle"
)

// BenchmarkThrottle measures the closed path with the dependency's throttle on, as the
// plugin runs it for a healthy dependency: the breaker's Allow, the throttle's Allow,
// the report to both. Beside it, the breaker alone and failsafe-go's adaptive throttler
// (its permit and its report).
func BenchmarkThrottle(b *testing.B) {
	b.Run("agentbreaker-breaker", benchAgentbreakerClosed)
	b.Run("agentbreaker-breaker+throttle", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, cooldown, nil)
		th := throttle.MustNew(throttle.Config{Name: "bench"})
		for b.Loop() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			if !th.Allow(throttle.Normal) {
				b.Fatal("shed")
			}
			p.Success()
			th.Report(true)
		}
	})
	b.Run("agentbreaker-throttle", func(b *testing.B) {
		b.ReportAllocs()
		th := throttle.MustNew(throttle.Config{Name: "bench"})
		for b.Loop() {
			if !th.Allow(throttle.Normal) {
				b.Fatal("shed")
			}
			th.Report(true)
		}
	})
	b.Run("failsafe-adaptivethrottler", func(b *testing.B) {
		b.ReportAllocs()
		th := adaptivethrottler.NewWithDefaults[any]()
		for b.Loop() {
			if !th.TryAcquirePermit() {
				b.Fatal("rejected")
			}
			th.RecordSuccess()
		}
	})
	// While shedding: a Low call against p ≈ 0.5, refused or sent and failed.
	b.Run("agentbreaker-throttle-shedding", func(b *testing.B) {
		b.ReportAllocs()
		th := throttle.MustNew(throttle.Config{Name: "bench", K: 1, MinRequests: 1})
		for i := range 1000 {
			th.Report(i%2 == 0)
		}
		for b.Loop() {
			if th.Allow(throttle.Low) {
				th.Report(true)
			}
		}
	})
}

// BenchmarkThrottleParallel is BenchmarkThrottle's healthy paths with every goroutine
// sharing one breaker and one throttle.
func BenchmarkThrottleParallel(b *testing.B) {
	b.Run("agentbreaker-breaker+throttle", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, cooldown, nil)
		th := throttle.MustNew(throttle.Config{Name: "bench"})
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := br.Allow()
				if err != nil {
					panic(err)
				}
				if !th.Allow(throttle.Normal) {
					panic("shed")
				}
				p.Success()
				th.Report(true)
			}
		})
	})
	b.Run("failsafe-adaptivethrottler", func(b *testing.B) {
		b.ReportAllocs()
		th := adaptivethrottler.NewWithDefaults[any]()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !th.TryAcquirePermit() {
					panic("rejected")
				}
				th.RecordSuccess()
			}
		})
	})
}
