package bench

import (
	"sync/atomic"
	"testing"
)

// Baselines put the breaker numbers on a scale: the cheapest thing a call can cost (a
// function call the compiler may not inline) and one atomic add on a word every
// goroutine shares, which is what any shared counter pays once cores contend for it.

//go:noinline
func call(n int64) int64 { return n + 1 }

// shared is the one word every goroutine adds to.
var shared atomic.Int64

func BenchmarkBaseline(b *testing.B) {
	b.Run("call", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for b.Loop() {
			n = call(n)
		}
	})
	b.Run("atomic-add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			shared.Add(1)
		}
	})
}

func BenchmarkBaselineParallel(b *testing.B) {
	b.Run("call", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var n int64
			for pb.Next() {
				n = call(n)
			}
			_ = n
		})
	})
	b.Run("atomic-add", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				shared.Add(1)
			}
		})
	})
}
