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
// So the throttle watches what its shedding does. A bucket is saturated when, over
// the window that ends in it, the throttle (or an open breaker, Refused) held back at
// least half of the requests, at least MinRequests/2 calls were sent, and the sent
// calls' accept ratio a is still below saturatedBelow of the rule's target (1/K, or
// s/K once s is set). After two whole windows of saturated buckets in a row (one is
// not enough: an overloaded dependency whose throttle overshoots and undershoots in
// turn, at 90% failing in the simulator, stays below it for one) the throttle
// takes a, or rather the low end of its two-standard-deviation (Wilson) interval, as the share
// the dependency accepts at any load, s, and counts each accept
// as 1/s of one in the rule: p = max(0, (requests − (K/s)·accepts) / (requests + 1)).
// A dependency that fails a share at random then sees no shedding at all, and one
// that has both (a share failing at random, and a capacity) is held at about K calls
// per call its capacity accepts. s is forgotten when the sent calls' accept ratio
// reaches the plain rule's target again (the dependency recovered), when nothing is
// accepted (a total outage, the breaker's), and by Reset.
//
// In a dependency whose failures do come from load, shedding half of the calls brings
// the accept ratio to about 1/K within a window, so the buckets are not saturated and
// the rule is the SRE one. The state is updated once per bucket, by the first call
// that reports in it: nothing is added to the path of a call while nothing is shed.
const saturatedBelow = 0.95

// independence is a throttle's estimate of the share accepted at any load.
type independence struct {
	held  window        // calls held back (shed, or refused by a breaker) per bucket
	share atomic.Uint64 // math.Float64bits of s; 0 while the failures are taken to come from load
	run   atomic.Int64  // saturated buckets in a row
	seen  atomic.Int64  // the last epoch evaluated, plus one
}

// hold counts one call held back in the bucket of epoch e.
func (t *Throttle) hold(e int64) {
	t.ind.held.addAt(e, int(uint64(e)%uint64(len(t.ind.held.slots))), false)
}

// kFor is the multiplier on accepts: K, or K/s once load-independent failures are
// seen.
func (t *Throttle) kFor() float64 {
	if s := math.Float64frombits(t.ind.share.Load()); s > 0 {
		return t.k / s
	}
	return t.k
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
	if sent < max(t.minReq/2, 1) {
		return // too few sent calls to tell anything either way
	}
	if acc == 0 {
		t.forget() // a total outage: the breaker's
		return
	}
	a := float64(acc) / float64(sent)
	if s > 0 && a*t.k >= 1 {
		t.forget() // the plain rule would shed nothing: recovered
		return
	}
	target := 1 / t.k
	if s > 0 {
		target = s / t.k
	}
	if 2*held < req || a >= saturatedBelow*target {
		t.ind.run.Store(0)
		return
	}
	if t.ind.run.Add(1) < 2*int64(len(t.win.slots)) {
		return
	}
	t.ind.run.Store(0)
	t.ind.share.Store(math.Float64bits(lowerBound(acc, sent)))
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
	t.ind.run.Store(0)
}

// LoadIndependent returns the share of sent calls the throttle takes the dependency to
// accept at any load (see the package doc), and whether it has seen such failures:
// while it has, each accept counts as 1/share of one in the rule.
func (t *Throttle) LoadIndependent() (share float64, ok bool) {
	s := math.Float64frombits(t.ind.share.Load())
	return s, s > 0
}
