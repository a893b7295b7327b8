package soak

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// The checker itself: a call inside a fleet-wide open span (past the grace) counts, one
// before the trip, within the grace, at the probe or inside an excluded window does not.
func TestOpenCheckCountsOnlyCallsInsideASpan(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	r := &run{t: t, obs: newObserver()}
	r.obs.transitions = []transition{
		{replica: 0, dep: depOrders, from: breaker.Closed, to: breaker.Open, at: at(0)},
		{replica: 1, dep: depOrders, from: breaker.Closed, to: breaker.Open, at: at(300 * time.Millisecond)},
		{replica: 2, dep: depOrders, from: breaker.Open, to: breaker.HalfOpen, at: at(5 * time.Second)},
	}
	r.excluded = [][2]time.Time{{at(3 * time.Second), at(4 * time.Second)}}
	ns := func(d time.Duration) int64 { return at(d).UnixNano() }
	st := worldStats{Arrivals: map[string][]int64{depOrders: {
		ns(-time.Second),                     // before the trip
		ns(500 * time.Millisecond),           // within the grace
		ns(2 * time.Second),                  // inside: counts
		ns(3500 * time.Millisecond),          // excluded (Redis down)
		ns(5 * time.Second),                  // the probe
		ns(6 * time.Second),                  // after
		ns(openGrace + 100*time.Millisecond), // inside: counts
	}}}
	v, spans, _ := r.checkOpenBreakers(st)
	if v != 2 || spans != 1 {
		t.Fatalf("violations %d in %d spans, want 2 in 1", v, spans)
	}
}

// The short run's schedule has every kind of fault.
func TestShortScheduleHasEveryKind(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		seen := map[string]bool{}
		for _, f := range schedule(seed, 100*time.Second, replicaCount) {
			seen[f.kind] = true
			if f.start+f.dur > 85*time.Second {
				t.Fatalf("seed %d: %v runs into the quiet tail", seed, f)
			}
		}
		for _, k := range faultKinds {
			if !seen[k] {
				t.Fatalf("seed %d: no %q in\n%s", seed, k, describeSchedule(schedule(seed, 100*time.Second, replicaCount)))
			}
		}
	}
}
