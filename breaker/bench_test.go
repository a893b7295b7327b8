package breaker

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

func BenchmarkClosedAllowSuccess(b *testing.B) {
	br := MustNew(Config{Name: "bench"})
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Success()
	}
}

func BenchmarkClosedAllowSuccessParallel(b *testing.B) {
	br := MustNew(Config{Name: "bench"})
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
}

func BenchmarkOpenReject(b *testing.B) {
	br := MustNew(Config{Name: "bench", Policy: Policy{Cooldown: time.Hour}})
	br.ForceOpen("bench")
	br.Reset("")
	for range 20 {
		p, _ := br.Allow()
		p.Failure()
	}
	if br.State() != Open {
		b.Fatalf("state %v", br.State())
	}
	for b.Loop() {
		if _, err := br.Allow(); err == nil {
			b.Fatal("admitted")
		}
	}
}

// BenchmarkCoarseStalenessSaturated runs 32 goroutines per core through the closed path
// of one breaker on the default clock and reports how far behind the precise clock the
// coarse clock was when they read it (max-stale-µs and p99-stale-µs): issue 10 (g)
// measured up to a second before busy callers refreshed it. Each sample reads the
// precise clock, the coarse clock and the precise clock again, and is kept only when the
// two precise readings are within 20µs (the reader was not descheduled in between).
func BenchmarkCoarseStalenessSaturated(b *testing.B) {
	br := MustNew(Config{Name: "bench"})
	base := clock.CoarseBase()
	workers := 32 * runtime.GOMAXPROCS(0)
	samples := make([][]time.Duration, workers)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := max(1, b.N/workers)
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				p, _ := br.Allow()
				p.Success()
				if i%1024 == 0 {
					t0 := time.Since(base)
					c := time.Duration(clock.CoarseNanos())
					if t1 := time.Since(base); t1-t0 < 20*time.Microsecond {
						samples[w] = append(samples[w], max(0, t0-c))
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-stale-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-stale-µs")
}

// BenchmarkClosedAllowNoProbeSuccess is the closed path of a mutation's admission.
func BenchmarkClosedAllowNoProbeSuccess(b *testing.B) {
	br := MustNew(Config{Name: "bench"})
	for b.Loop() {
		p, err := br.AllowNoProbe()
		if err != nil {
			b.Fatal(err)
		}
		p.Success()
	}
}
