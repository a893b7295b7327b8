package clock

import (
	"testing"
	"time"
)

var sink int64

func BenchmarkCoarseNanos(b *testing.B) {
	for b.Loop() {
		sink += CoarseNanos()
	}
}

func BenchmarkCoarseNanosParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var s int64
		for pb.Next() {
			s += CoarseNanos()
		}
		sink += s
	})
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		sink += time.Now().UnixNano()
	}
}
