package a2aguard_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// BenchmarkOpenBreakerTurn is one whole turn through adk-go's runner (a root that
// transfers to the guarded remote agent) while the remote's breaker is open: the cost
// of answering without sending. Record with
//
//	go test -run '^$' -bench OpenBreakerTurn -benchmem -count 6 ./a2aguard/
func BenchmarkOpenBreakerTurn(b *testing.B) {
	r := newRig(b, rigConfig{shape: transfer, url: deadURL(b)})
	for range breaker.DefaultMinimumCalls {
		r.turn()
	}
	if r.breaker().State() != breaker.Open {
		b.Fatal("the breaker did not open")
	}
	b.ReportAllocs()
	for b.Loop() {
		sid := r.newSession() // a session per turn, so its history does not grow
		if _, err := r.turnIn(sid); err != nil {
			b.Fatal(err)
		}
	}
}
