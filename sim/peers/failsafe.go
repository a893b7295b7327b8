package peers

import (
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"

	"github.com/agentbreaker/agentbreaker/sim"
)

// FailsafeThrottler is failsafe-go's adaptivethrottler at its defaults (it sheds once
// fewer than 90% of the calls of the last minute succeed, at most 90% of them), used
// as its users would: one attempt per call, a rejection or a failure reaching the model
// as an error. It must run inside a testing/synctest bubble: before each call the guard
// sleeps the bubble's clock forward to the simulator's, so the throttler's wall-clock
// window follows virtual time.
func FailsafeThrottler() sim.Peer {
	return sim.Peer{
		Name:        "failsafe-go-adaptivethrottler",
		Description: "failsafe-go v0.9.8 adaptivethrottler defaults (success threshold 0.9 over 1m, max rejection 0.9); one attempt, errors to the model",
		New: func(now func() time.Time) sim.PeerGuard {
			return &failsafeGuard{now: now, offset: time.Until(now()), t: adaptivethrottler.NewWithDefaults[any]()}
		},
	}
}

type failsafeGuard struct {
	now    func() time.Time
	offset time.Duration // simulator time − bubble time at the start
	t      adaptivethrottler.AdaptiveThrottler[any]
}

// sync moves the bubble's clock to the simulator's.
func (g *failsafeGuard) sync() {
	if d := time.Until(g.now().Add(-g.offset)); d > 0 {
		time.Sleep(d)
	}
}

func (g *failsafeGuard) Admit() bool {
	g.sync()
	return g.t.TryAcquirePermit()
}

func (g *failsafeGuard) Done(failed bool) {
	g.sync()
	if failed {
		g.t.RecordFailure()
	} else {
		g.t.RecordSuccess()
	}
}
