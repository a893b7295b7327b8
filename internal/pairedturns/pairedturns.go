package pairedturns

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breakertest"
)

// Result is one paired run: the mean time of a turn of each arm.
type Result struct {
	Base, Measured time.Duration // per turn
}

// OverheadPercent is how much longer the measured arm's turns took, in percent of the
// base arm's.
func (r Result) OverheadPercent() float64 {
	return 100 * float64(r.Measured-r.Base) / float64(r.Base)
}

// Run alternates turns of base and measured for b.Loop (which arm goes first
// alternates too) and returns their mean turn times. Each arm starts a new session every
// fourth turn, so that a short history keeps turns alike. Collections are the largest
// noise, one landing on whichever turn allocates when it is due and costing more than a
// turn: the garbage collector is switched off for the loop and run between turns,
// untimed, every 256 rounds; b.ReportAllocs still counts both arms' allocations.
func Run(b *testing.B, base, measured *breakertest.Harness) Result {
	ctx := context.Background()
	type arm struct {
		h    *breakertest.Harness
		sid  string
		took time.Duration
	}
	arms := [2]*arm{{h: base}, {h: measured}}
	turn := func(a *arm, fresh bool) {
		var err error
		if fresh || a.sid == "" {
			if a.sid, err = a.h.NewSession(ctx); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := a.h.Run(ctx, a.sid, "go"); err != nil {
			b.Fatal(err)
		}
		a.took += time.Since(start)
	}
	for _, a := range arms { // warm both: caches, the coarse clock, the first session
		turn(a, true)
		a.took = 0
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%256 == 0 {
			runtime.GC()
		}
		first := i & 1
		turn(arms[first], i%4 == 0)
		turn(arms[1-first], i%4 == 0)
		i++
	}
	if i == 0 {
		return Result{}
	}
	return Result{Base: arms[0].took / time.Duration(i), Measured: arms[1].took / time.Duration(i)}
}
