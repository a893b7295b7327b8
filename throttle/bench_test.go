package throttle_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/throttle"
)

func BenchmarkAllowReport(b *testing.B) {
	th := throttle.MustNew(throttle.Config{})
	b.ReportAllocs()
	for b.Loop() {
		if th.Allow(throttle.Normal) {
			th.Report(true)
		}
	}
}

func BenchmarkAllowReportParallel(b *testing.B) {
	th := throttle.MustNew(throttle.Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if th.Allow(throttle.Normal) {
				th.Report(true)
			}
		}
	})
}

func BenchmarkShedding(b *testing.B) {
	th := throttle.MustNew(throttle.Config{MinRequests: 1})
	th.Report(true)
	for range 100 {
		th.Report(false)
	}
	b.ReportAllocs()
	for b.Loop() {
		if th.Allow(throttle.Low) {
			th.Report(false)
		}
	}
}
