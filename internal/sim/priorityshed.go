package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/throttle"
)

// PriorityShed is what a partial-outage row's throttle shed during the outage, by the
// priority it saw each call at: the turn's own, or critical once the dependency has
// served the turn (a turn that got part of its data is let finish).
type PriorityShed struct {
	// Asked counts the calls the turns asked for during the outage, sent or not; Shed
	// the calls of them the throttle shed.
	Asked, Shed map[throttle.Priority]int
	// NormalShedBesideLow counts the normal calls shed in a throttle bucket (its window
	// over its buckets, 2 s for PartialThrottle) in which a low call was sent: where the
	// order of priorities did not hold over the bucket, because the share shed moved.
	NormalShedBesideLow int
	// LowAskedBesideNormal and LowShedBesideNormal count the low calls asked for and
	// shed in the buckets in which a normal call was shed.
	LowAskedBesideNormal, LowShedBesideNormal int
}

// Share is the share of pr's calls shed; 0 when none was asked for.
func (ps PriorityShed) Share(pr throttle.Priority) float64 {
	return ratio(ps.Shed[pr], ps.Asked[pr])
}

// BesideLow is the share of the normal calls shed that had a low call sent in the
// same throttle bucket; 0 when no normal call was shed.
func (ps PriorityShed) BesideLow() float64 {
	return ratio(ps.NormalShedBesideLow, ps.Shed[throttle.Normal])
}

// LowShareBesideNormal is the share of low calls shed in the buckets in which a normal
// call was shed; 1 when no low call was asked for there.
func (ps PriorityShed) LowShareBesideNormal() float64 {
	if ps.LowAskedBesideNormal == 0 {
		return 1
	}
	return ratio(ps.LowShedBesideNormal, ps.LowAskedBesideNormal)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// shedCounter counts one strategy run's calls for its PriorityShed.
type shedCounter struct {
	width   int64 // nanoseconds per throttle bucket
	asked   map[throttle.Priority]int
	shed    map[throttle.Priority]int
	buckets map[int64]*shedBucket
}

// shedBucket is one throttle bucket's low and normal calls.
type shedBucket struct {
	lowAsked, lowShed, lowSent, normalShed int
}

func newShedCounter(tc throttle.Config) *shedCounter {
	return &shedCounter{
		width: int64(tc.Window) / int64(tc.Buckets),
		asked: map[throttle.Priority]int{}, shed: map[throttle.Priority]int{},
		buckets: map[int64]*shedBucket{},
	}
}

// count records a call asked for at now at priority pr: shed by the throttle, sent,
// or refused otherwise (neither). The throttle's buckets count from its start, which
// is the run's Start.
func (sc *shedCounter) count(pr throttle.Priority, now time.Time, shed, sent bool) {
	sc.asked[pr]++
	if shed {
		sc.shed[pr]++
	}
	i := now.Sub(Start).Nanoseconds() / sc.width
	b := sc.buckets[i]
	if b == nil {
		b = &shedBucket{}
		sc.buckets[i] = b
	}
	switch pr {
	case throttle.Low:
		b.lowAsked++
		if shed {
			b.lowShed++
		}
		if sent {
			b.lowSent++
		}
	case throttle.Normal:
		if shed {
			b.normalShed++
		}
	}
}

// result sums the buckets.
func (sc *shedCounter) result() PriorityShed {
	ps := PriorityShed{Asked: sc.asked, Shed: sc.shed}
	for _, b := range sc.buckets {
		if b.normalShed == 0 {
			continue
		}
		if b.lowSent > 0 {
			ps.NormalShedBesideLow += b.normalShed
		}
		ps.LowAskedBesideNormal += b.lowAsked
		ps.LowShedBesideNormal += b.lowShed
	}
	return ps
}

// countShed records a call of the outage for the row's PriorityShed: ok says it was
// sent, c.shed that the throttle shed it.
func (px *partialRun) countShed(x *sim, c *call, now time.Time, ok bool) {
	if px == nil || px.counter == nil || !x.inOutage(now) {
		return
	}
	pr := px.priority(c.turn.id)
	if c.turn.served {
		pr = throttle.Critical
	}
	px.counter.count(pr, now, c.shed, ok)
}

// PriorityTable prints, for the throttle row of each result (one per shape): the share
// of low and of normal calls shed; the share of low calls shed in the buckets in which
// normal calls were shed; and the share of the normal calls shed that had a low call
// sent in the same bucket.
func PriorityTable(results []*PartialResult) string {
	var b strings.Builder
	if len(results) > 0 {
		fmt.Fprintf(&b, "%.0f%% failing, %s; low and normal by the priority the throttle saw\n", results[0].Failing*100, StrategyThrottle)
	}
	fmt.Fprintf(&b, "%-18s %9s %12s %15s %18s\n", "shape", "low shed", "normal shed", "low shed where", "normal shed with")
	fmt.Fprintf(&b, "%-18s %9s %12s %15s %18s\n", "", "", "", "normal shed", "a low sent")
	for _, pr := range results {
		ps := pr.Shed[StrategyThrottle]
		fmt.Fprintf(&b, "%-18s %8.1f%% %11.1f%% %14.1f%% %17.1f%%\n", pr.Shape, 100*ps.Share(throttle.Low),
			100*ps.Share(throttle.Normal), 100*ps.LowShareBesideNormal(), 100*ps.BesideLow())
	}
	return b.String()
}
