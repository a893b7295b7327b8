package peers

import (
	"math/rand/v2"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// FailsafeThrottler is failsafe-go's adaptivethrottler at its defaults (it sheds once
// fewer than 90% of the calls of the last minute succeed, at most 90% of them), used
// as its users would: one attempt per call, a rejection or a failure reaching the model
// as an error. It must run inside a testing/synctest bubble: before each call the guard
// sleeps the bubble's clock forward to the simulator's, so the throttler's wall-clock
// window follows virtual time.
//
// The throttler rejects a call when a uniform draw falls under its rejection rate, and
// draws from math/rand/v2's global generator, which cannot be seeded. So that the same
// run gives the same row, the guard asks the throttler for its permit (which computes
// the rate from its window and changes nothing else), reads the rate, and makes the same
// comparison against a generator of its own with a fixed seed: the rule and the rate are
// failsafe-go's, only the generator is not.
func FailsafeThrottler() sim.Peer {
	return sim.Peer{
		Name:        "failsafe-go-adaptivethrottler",
		Description: "failsafe-go v0.9.8 adaptivethrottler defaults (success threshold 0.9 over 1m, max rejection 0.9); one attempt, errors to the model; its rejection draw from a seeded generator",
		New: func(now func() time.Time) sim.PeerGuard {
			return &failsafeGuard{
				now:    now,
				offset: time.Until(now()),
				t:      adaptivethrottler.NewWithDefaults[any](),
				draw:   rand.New(rand.NewPCG(1, 2)),
			}
		},
	}
}

type failsafeGuard struct {
	now    func() time.Time
	offset time.Duration // simulator time − bubble time at the start
	t      adaptivethrottler.AdaptiveThrottler[any]
	draw   *rand.Rand // in place of failsafe-go's unseeded draw
}

// sync moves the bubble's clock to the simulator's.
func (g *failsafeGuard) sync() {
	if d := time.Until(g.now().Add(-g.offset)); d > 0 {
		time.Sleep(d)
	}
}

// Admit decides as adaptiveThrottler.AcquirePermit does (v0.9.8: admit at a rate of 0,
// reject at 1 or when the rate is at least the draw), with the guard's own draw. The
// guard is called from one goroutine, so the rate read is the one the permit computed.
func (g *failsafeGuard) Admit() bool {
	g.sync()
	g.t.TryAcquirePermit()
	rate := g.t.RejectionRate()
	return rate == 0 || rate < 1 && rate < g.draw.Float64()
}

func (g *failsafeGuard) Done(failed bool) {
	g.sync()
	if failed {
		g.t.RecordFailure()
	} else {
		g.t.RecordSuccess()
	}
}
