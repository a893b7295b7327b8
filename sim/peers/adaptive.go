package peers

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// FailsafeLimiter is failsafe-go's adaptivelimiter at its defaults (limits 1 to 200
// from 20, a recent window of 1 to 30 s with at least 50 samples against a weighted
// baseline), used as its documentation says: TryAcquirePermit refuses at once, Record
// on an answer, Drop on a timeout ("we don't want the execution duration to influence
// the limiter"). Like FailsafeThrottler it reads the wall clock, so it must run inside
// a testing/synctest bubble; the guard sleeps the bubble's clock forward to the
// simulator's before every call.
func FailsafeLimiter() sim.LimitPeer {
	return sim.LimitPeer{
		Name:        "failsafe-go-adaptivelimiter",
		Description: "failsafe-go v0.9.8 adaptivelimiter defaults (limit 1..200 from 20); TryAcquirePermit, Record on an answer, Drop on a timeout",
		New: func(now func() time.Time) sim.LimitGuard {
			return &failsafeLimitGuard{now: now, offset: time.Until(now()), l: adaptivelimiter.NewWithDefaults[any]()}
		},
	}
}

type failsafeLimitGuard struct {
	now    func() time.Time
	offset time.Duration // simulator time − bubble time at the start
	l      adaptivelimiter.AdaptiveLimiter[any]
}

type failsafeLimitPermit struct {
	g *failsafeLimitGuard
	p adaptivelimiter.Permit
}

// sync moves the bubble's clock to the simulator's.
func (g *failsafeLimitGuard) sync() {
	if d := time.Until(g.now().Add(-g.offset)); d > 0 {
		time.Sleep(d)
	}
}

func (g *failsafeLimitGuard) Acquire() (sim.LimitPermit, bool) {
	g.sync()
	p, ok := g.l.TryAcquirePermit()
	if !ok {
		return nil, false
	}
	return &failsafeLimitPermit{g: g, p: p}, true
}

func (p *failsafeLimitPermit) Done(timedOut bool) {
	p.g.sync()
	if timedOut {
		p.p.Drop()
	} else {
		p.p.Record()
	}
}

// RunCliff runs the simulator's latency cliff with failsafe-go's adaptivelimiter as the
// last row, inside a testing/synctest bubble (see the package doc), which is why it
// takes t; it must not be called from inside one.
func RunCliff(t *testing.T, c sim.Cliff) (*sim.CliffResult, error) {
	var out *sim.CliffResult
	var err error
	synctest.Test(t, func(*testing.T) {
		c.Peers = append(c.Peers, FailsafeLimiter())
		out, err = sim.RunCliff(c)
	})
	return out, err
}
