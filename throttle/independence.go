package throttle

import (
	"math"
	"sync/atomic"
)

// The SRE rule assumes failures come from load: shed a share, the dependency gets
// less, and more of what it gets is accepted, until about K calls are sent per accept.
// When a share of the calls fails whatever the load (a bad replica behind a balancer,
// a flaky network path), shedding raises nothing: with a share s of sent calls
// accepted and K·s < 1 the rule has no fixed point below 1, and it climbs until
// almost every call is shed, calls that would have succeeded with them.
//
// So the throttle watches what its shedding does, once per bucket (by the first call
// that reports in it, so nothing is added to a call's path while nothing is shed):
//
//   - Evidence. While the throttle (or an open breaker, Refused) holds back at least
//     half of the requests of its window, it adds up the window's sent and accepted
//     calls. After two windows of that, if the sent calls' accept ratio a is still
//     below saturatedBelow of the rule's target (1/K, or s/K once s is set), the
//     shedding did not bring it up.
//   - Trial. The throttle then takes the low end of a's two-standard-deviation (Wilson)
//     interval as s, the share the dependency accepts at any load, and counts each
//     accept as 1/s of one in the rule: p = max(0, (requests − (K/s)·accepts) /
//     (requests + 1)). That sheds less (nothing, when all the failures are
//     load-independent). The trial goes on until the window has sent 1.5 times the
//     calls of a window before it, and at least 40 (and 2 × MinRequests), for at most
//     three windows.
//   - Verdict. If the accept ratio held (at least trialDrop of a), s is kept: sending
//     more did not make more fail. If it fell, or the trial never sent enough, the
//     failures come from load: s goes back to what it was, and no evidence is gathered
//     for 8 windows, 16 after a second undone trial, and so on up to 64.
//
// s is forgotten when the low end of the sent calls' accept ratio reaches the plain
// rule's target (the dependency recovered), when the window holds no accept (a total
// outage, the breaker's), and by Reset. LoadIndependent reports it.
//
// Limits. A dependency with both a capacity and a share failing at random on top is
// told from an overload only when the capacity does not bind once the throttle sheds
// less: otherwise the trial's accept ratio falls, and the SRE rule stays. The
// evaluation uses this replica's own calls, also in fleet mode. At low volume (a few
// calls a window) there is too little to tell either way, and the SRE rule stays.
const saturatedBelow = 0.9

// independence is a throttle's estimate of the share accepted at any load.
type independence struct {
	held  window        // calls held back (shed, or refused by a breaker) per bucket
	share atomic.Uint64 // math.Float64bits of s; 0 while the failures are taken to come from load
	run   atomic.Int64  // buckets in a row whose window was shed heavily
	// runSent and runAcc add up the sent and accepted calls of those buckets' windows.
	runSent, runAcc atomic.Uint64
	// A trial of a new estimate: it ends in epoch trialEnd (0: none), and is undone,
	// back to prev, if the accept ratio falls below trialA, the ratio measured before.
	trialEnd   atomic.Int64
	trialA     atomic.Uint64
	trialSent  atomic.Uint64
	prev       atomic.Uint64
	quietUntil atomic.Int64 // no evidence is gathered before this epoch
	quiet      atomic.Int64 // trials undone so far: the quiet spell after the next is 2^quiet windows
	seen       atomic.Int64 // the last epoch evaluated, plus one
}

// hold counts one call held back in the bucket of epoch e.
func (t *Throttle) hold(e int64) {
	t.ind.held.addAt(e, int(uint64(e)%uint64(len(t.ind.held.slots))), false)
}

// kFor is the multiplier on accepts: K, or K/s once load-independent failures are
// seen.
func (t *Throttle) kFor() float64 {
	if s := math.Float64frombits(t.ind.share.Load()); s > 0 {
		return t.kNow() / s
	}
	return t.kNow()
}

// evaluate updates the estimate from the window that ends in epoch e, once per epoch.
// Two callers of a new bucket may race; the one that advances seen evaluates.
func (t *Throttle) evaluate(e int64) {
	old := t.ind.seen.Load()
	if old > e || !t.ind.seen.CompareAndSwap(old, e+1) {
		return
	}
	req, acc := t.win.sums(e) // this replica's own calls: what its shedding did
	held, _ := t.ind.held.sums(e)
	s := math.Float64frombits(t.ind.share.Load())
	if held > req {
		held = req
	}
	sent := req - held
	if sent < max(t.minReq.Load()/2, 1) {
		return // too few sent calls to tell anything either way
	}
	if acc == 0 {
		t.forget() // a total outage: the breaker's
		return
	}
	buckets := int64(len(t.win.slots))
	if end := t.ind.trialEnd.Load(); end != 0 {
		if e < end {
			return
		}
		// The trial's window: the throttle sheds less under the new estimate. Had the
		// failures come from load, the accept ratio would have fallen with it. It must
		// have sent clearly more than before (a trial that still sheds about as much
		// tells nothing) and enough calls to tell; until it has, it goes on a bucket at a
		// time, up to three windows in all. Then the estimate is kept if the accept
		// ratio did not fall, and otherwise undone, leaving the SRE rule as it was.
		enough := sent >= max(2*t.minReq.Load(), trialCalls)
		more := float64(sent) >= trialMore*float64(t.ind.trialSent.Load())
		if (!enough || !more) && e < end+2*buckets {
			return
		}
		t.ind.trialEnd.Store(0)
		if !enough || !more || float64(acc) < trialDrop*math.Float64frombits(t.ind.trialA.Load())*float64(sent) {
			t.ind.share.Store(t.ind.prev.Load())
			q := min(t.ind.quiet.Add(1)+2, maxQuiet)
			t.ind.quietUntil.Store(e + (int64(1)<<q)*buckets)
		}
		return
	}
	if s > 0 && lowerBound(acc, sent)*t.kNow() >= 1 {
		t.forget() // the plain rule would shed nothing: recovered
		return
	}
	if 2*held < req || e < t.ind.quietUntil.Load() {
		t.resetRun() // not shedding much, or just shown the failures come from load
		return
	}
	// Shedding heavily: add this window to the run's evidence. Each bucket is counted in
	// as many windows as the ring has buckets, so the run's sums are that many times the
	// calls they stand for.
	n := t.ind.run.Add(1)
	runSent, runAcc := t.ind.runSent.Add(sent), t.ind.runAcc.Add(acc)
	if n < 2*buckets {
		return
	}
	t.resetRun()
	target := 1 / t.kNow()
	if s > 0 {
		target = s / t.kNow()
	}
	if float64(runAcc) >= saturatedBelow*target*float64(runSent) {
		return // shedding holds the accept ratio at the target
	}
	// Try the estimate for a window: it sheds less (none at all if the failures are
	// all load-independent), and the next window tells.
	t.ind.trialA.Store(math.Float64bits(float64(runAcc) / float64(runSent)))
	t.ind.trialSent.Store(runSent / uint64(2*buckets)) // calls sent per window before
	t.ind.prev.Store(t.ind.share.Load())
	t.ind.share.Store(math.Float64bits(lowerBound(runAcc/uint64(buckets), max(runSent/uint64(buckets), 1))))
	t.ind.trialEnd.Store(e + buckets)
}

// A throttle whose trial showed the failures come from load waits 8, 16, 32 … up to
// 2^maxQuiet windows before it gathers evidence again: a trial sheds less for a window
// or more, which an overloaded dependency pays for.
const maxQuiet = 6

// A trial is judged on at least trialCalls sent calls (and 2 × MinRequests), and
// undone unless it sent trialMore times the calls of a window before it at an accept
// ratio of at least trialDrop of the one measured before it.
const (
	trialCalls = 40
	trialMore  = 1.5
	trialDrop  = 0.9
)

func (t *Throttle) resetRun() {
	t.ind.run.Store(0)
	t.ind.runSent.Store(0)
	t.ind.runAcc.Store(0)
}

// lowerBound is the lower end of the Wilson interval (two standard deviations) of the
// share acc/n: the estimate of s errs low, so that K/s errs high and the rule leaves
// its climb towards 1 (K/s · s > 1) even when shedding left few calls to measure.
func lowerBound(acc, n uint64) float64 {
	const z2 = 4 // z = 2
	a, m := float64(acc)/float64(n), float64(n)
	lb := (a + z2/(2*m) - 2*math.Sqrt(a*(1-a)/m+z2/(4*m*m))) / (1 + z2/m)
	return max(lb, 1/m) // never 0: acc > 0
}

func (t *Throttle) forget() {
	t.ind.share.Store(0)
	t.ind.trialEnd.Store(0)
	t.ind.quietUntil.Store(0)
	t.ind.quiet.Store(0)
	t.resetRun()
}

// LoadIndependent returns the share of sent calls the throttle takes the dependency to
// accept at any load (see the package doc), and whether it has seen such failures:
// while it has, each accept counts as 1/share of one in the rule.
func (t *Throttle) LoadIndependent() (share float64, ok bool) {
	s := math.Float64frombits(t.ind.share.Load())
	return s, s > 0
}
