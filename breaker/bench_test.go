package breaker

import (
	"testing"
	"time"
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
