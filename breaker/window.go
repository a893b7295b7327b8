package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	_ "unsafe" // for the linkname below

	"github.com/agentbreaker/agentbreaker/internal/stripe"
)

// The rolling window. Failures and slow calls are rare and go through the breaker's
// mutex. Successes are the hot path: they are added to one of the breaker's striped
// counters and folded into the window under the mutex, so concurrent callers on
// different cores do not write the same cache line.
//
// The stripes live in a shared arena rather than in each breaker: one arena chunk holds
// stripeCount cache lines, and line i holds stripe i of eight breakers. A breaker then
// costs 8 bytes per stripe instead of a padded 64, which is what keeps it under 1 KiB
// with sixteen stripes, and callers only contend when their goroutines pick the same
// stripe, whichever breakers they call.
//
// Each stripe word is tag<<tagShift | count. The tag is the low bits of the breaker's
// generation: a transition retags every stripe (taking its count) before it publishes
// the new generation, and a success only counts if its stripe still carries the tag of
// the generation its permit was granted in. So a success that checked the generation
// just before a transition either lands before the retag (and is taken with the old
// period) or finds a new tag and is dropped: it can never leak into the next period.

const (
	stripeCount = stripe.Count
	arenaCols   = 8  // breakers per chunk: one 64-byte line holds a stripe of each
	tagShift    = 40 // a stripe counts up to 2^40 calls between folds
	countMask   = 1<<tagShift - 1
	tagMask     = 1<<(64-tagShift) - 1
)

type arenaChunk struct {
	// The chunk's first cache line stays empty. Stripes on it measured 11 ns per closed
	// call with two goroutines, against 5 ns on any other line, whether the stripe was
	// picked by stack or by processor and in chunks of the arena and fresh ones alike
	// (AMD EPYC, no hardware counters to say why); the same writes outside the breaker
	// were not slower there. The line is free: the chunk stays in the 1152-byte size
	// class. BenchmarkClosedParallel and TestStripesKeepOffTheChunksFirstLine watch it.
	_     [arenaCols]int64
	lines [stripeCount][arenaCols]atomic.Int64
	// contended[col] is set the first time two callers of that column's breaker are seen
	// writing one stripe at once (a compare-and-swap lost to the other): from then on the
	// breaker picks stripes by processor instead of by stack (see mine). Written once,
	// read on every success; it sits after the stripe lines so that reading it never
	// shares a line with a counter.
	contended [arenaCols]atomic.Bool
}

// stripes is one breaker's column of an arena chunk.
type stripes struct {
	chunk *arenaChunk
	col   int
}

var arena struct {
	mu   sync.Mutex
	free []stripes
}

// allocStripes hands out a column, carving a new chunk when none is free. A chunk is
// 1120 bytes, in the 1152-byte size class (18 cache lines), so it starts on a
// cache-line boundary.
func allocStripes() stripes {
	arena.mu.Lock()
	defer arena.mu.Unlock()
	if n := len(arena.free); n > 0 {
		s := arena.free[n-1]
		arena.free = arena.free[:n-1]
		s.chunk.contended[s.col].Store(false) // its previous breaker is gone
		return s
	}
	c := new(arenaChunk)
	for col := arenaCols - 1; col > 0; col-- {
		arena.free = append(arena.free, stripes{chunk: c, col: col})
	}
	return stripes{chunk: c}
}

// releaseStripes returns a column when its breaker is garbage collected.
func releaseStripes(s stripes) {
	arena.mu.Lock()
	defer arena.mu.Unlock()
	arena.free = append(arena.free, s)
}

func (s stripes) at(i int) *atomic.Int64 { return &s.chunk.lines[i][s.col] }

// mine is the caller's stripe: chosen by stack address while the breaker's callers have
// not been seen to collide, by processor once they have. The masks drop bounds checks.
func (s stripes) mine() *atomic.Int64 {
	col := s.col & (arenaCols - 1)
	if s.chunk.contended[col].Load() {
		return &s.chunk.lines[stripe.ByProcessor()][col]
	}
	return &s.chunk.lines[stripe.ByStack()][col]
}

// add counts one success on the caller's stripe if the stripe still carries tag. It
// returns the stripe's new count, or -1 when the success was dropped (a transition
// retagged the stripe after the caller checked its generation).
func (s stripes) add(tag uint64) int64 {
	// mine, written out: as a call it would not be inlined here, and the success path
	// would pay for one more call.
	col := s.col & (arenaCols - 1)
	var c *atomic.Int64
	if s.chunk.contended[col].Load() {
		c = &s.chunk.lines[stripe.ByProcessor()][col]
	} else {
		c = &s.chunk.lines[stripe.ByStack()][col]
	}
	for {
		v := c.Load()
		if uint64(v)>>tagShift != tag {
			return -1
		}
		if c.CompareAndSwap(v, v+1) {
			return (v + 1) & countMask
		}
		s.collided()
	}
}

// collided records that two callers wrote one stripe at once. Stack addresses hash to
// one of sixteen stripes, so two busy goroutines share one about one time in sixteen,
// and then for as long as they live, each write bouncing the line between their cores;
// processors never share a stripe (up to sixteen of them). Choosing by processor costs
// a call into the runtime, about 1 ns, which only a breaker that saw a collision pays.
func (s stripes) collided() {
	if f := &s.chunk.contended[s.col&(arenaCols-1)]; !f.Load() {
		f.Store(true)
	}
}

// bump counts n rejections of an open or half-open breaker whose generation has tag.
// Rejections are counted only so that busy rejecting callers refresh the coarse clock
// now and then; the counts are discarded when the breaker leaves the state. It adds by
// compare-and-swap, like add, so that two rejecting callers on one stripe are seen
// colliding and the breaker moves to per-processor stripes (an add would never fail,
// and the two would share a line for as long as they live). It returns the stripe's
// new count, or -1 when the stripe carries another tag: the breaker left the state
// after the caller read it, and a count landing in the next generation would pass for
// that many successes (an operator's Reset goes from open straight to closed).
func (s stripes) bump(tag uint64, n int64) int64 {
	c := s.mine()
	for {
		v := c.Load()
		if uint64(v)>>tagShift != tag {
			return -1
		}
		if c.CompareAndSwap(v, v+n) {
			return (v + n) & countMask
		}
		s.collided()
	}
}

// rejectionSample is how many rejections one write to the stripes stands for: a
// rejection writes (bump(tag, rejectionSample)) only when the runtime's per-thread
// generator says so, one time in rejectionSample. Rejections were 4.0 ns with an
// atomic add and 9.7 ns once the add became a compare-and-swap that detects two
// rejecting callers on one stripe; sampling keeps the detection (a sampled write is
// still a compare-and-swap) and the refresh rate of the coarse clock (one per
// RefreshEvery rejections on a stripe, on average), and makes the other rejections
// write nothing shared at all.
const rejectionSample = 16

// cheaprand is the runtime's per-thread wyrand generator: no lock, no shared line.
//
//go:linkname cheaprand runtime.cheaprand
func cheaprand() uint32

// take empties every stripe, gives it tag, and returns the counts it held.
func (s stripes) take(tag uint64) int64 {
	var sum int64
	for i := range stripeCount {
		sum += s.at(i).Swap(int64(tag<<tagShift)) & countMask
	}
	return sum
}

// bucket counts one slice of a time window. 64-bit counters cannot wrap.
type bucket struct {
	successes, failures, slow uint64
}

// window is guarded by the breaker's mutex, except for the stripes, which the hot path
// writes atomically. It is time-based (a ring of buckets) or, when size > 0,
// count-based (the last size calls).
type window struct {
	// Time-based.
	width    int64 // bucket width in nanoseconds
	buckets  []bucket
	cur      int   // index of the current bucket
	curStart int64 // start of the current bucket

	// Count-based: call number i (counted from 0 since the last reset) sits in bit
	// i%size of the failure words, bits[:n], and, when slow calls are tracked, of the
	// slow-call words, bits[n:2n], with n = (size+63)/64. One slice, not two: a slice
	// header is 24 bytes of every breaker (see Breaker's counters).
	size  int64
	total int64 // calls recorded since the last reset
	bits  []uint64

	// Sums over the window. Successes still sitting in the stripes are not in them.
	successes, failures, slow int64
}

func newWindow(p Policy, now int64) window {
	if p.WindowCalls > 0 {
		words := (p.WindowCalls + 63) / 64
		if p.SlowCallThreshold > 0 {
			words *= 2
		}
		return window{size: int64(p.WindowCalls), bits: make([]uint64, words)}
	}
	return window{
		width:    int64(p.Window) / int64(p.Buckets),
		buckets:  make([]bucket, p.Buckets),
		curStart: now,
	}
}

// end is when the current bucket ends: the first instant a success must take the
// breaker's lock to slide the window. A count window never slides with time.
func (w *window) end() int64 {
	if w.size > 0 {
		return math.MaxInt64
	}
	return w.curStart + w.width
}

// fold moves the striped successes into the window (the current bucket, or the next
// positions of a count window). tag is the breaker's current tag, which the stripes keep.
func (w *window) fold(s stripes, tag uint64) {
	n := s.take(tag)
	if n == 0 {
		return
	}
	if w.size > 0 {
		w.push(n)
		w.successes += min(n, w.size)
		return
	}
	w.buckets[w.cur].successes += uint64(n)
	w.successes += n
}

// push makes room for n calls at the end of a count window: the n oldest positions are
// forgotten, and whatever they counted leaves the sums.
func (w *window) push(n int64) {
	if n >= w.size {
		// Every position is overwritten.
		w.successes, w.failures, w.slow = 0, 0, 0
		clear(w.bits)
		w.total += n
		return
	}
	for i := w.total; i < w.total+n; i++ {
		if i >= w.size { // position i%size holds call i-size, which now leaves
			w.forget(i % w.size)
		}
	}
	w.total += n
}

// forget drops the call held at position pos of a count window from the sums.
func (w *window) forget(pos int64) {
	word, bit := pos>>6, uint64(1)<<(pos&63)
	failed := w.bits[word]&bit != 0
	if failed {
		w.bits[word] &^= bit
		w.failures--
	} else {
		w.successes--
	}
	if sw := w.slowWords(); sw > 0 && w.bits[sw+word]&bit != 0 {
		w.bits[sw+word] &^= bit
		w.slow--
	}
}

// slowWords is where a count window's slow-call words start in bits, or 0 when slow
// calls are not tracked.
func (w *window) slowWords() int64 {
	if n := (w.size + 63) >> 6; int64(len(w.bits)) > n {
		return n
	}
	return 0
}

// advance folds the stripes and slides a time window so that now falls in the current
// bucket. An earlier reading slides nothing: it is usually a reading taken before the
// caller got the lock, older than the one that last slid the window.
func (w *window) advance(now int64, s stripes, tag uint64) {
	if w.size > 0 || now < w.end() {
		return
	}
	hook(hookRotateBeforeFold)
	w.fold(s, tag)
	steps := (now - w.curStart) / w.width
	if steps >= int64(len(w.buckets)) {
		clear(w.buckets)
		w.successes, w.failures, w.slow = 0, 0, 0
	} else {
		for range steps {
			w.cur++
			if w.cur == len(w.buckets) {
				w.cur = 0
			}
			b := &w.buckets[w.cur]
			w.successes -= int64(b.successes)
			w.failures -= int64(b.failures)
			w.slow -= int64(b.slow)
			*b = bucket{}
		}
	}
	w.curStart += steps * w.width
}

// add records one measured call.
func (w *window) add(failed, slow bool) {
	if w.size > 0 {
		w.push(1)
		pos := (w.total - 1) % w.size
		word, bit := pos>>6, uint64(1)<<(pos&63)
		if failed {
			w.bits[word] |= bit
			w.failures++
		} else {
			w.successes++
		}
		if sw := w.slowWords(); slow && sw > 0 {
			w.bits[sw+word] |= bit
			w.slow++
		}
		return
	}
	b := &w.buckets[w.cur]
	if failed {
		b.failures++
		w.failures++
	} else {
		b.successes++
		w.successes++
	}
	if slow {
		b.slow++
		w.slow++
	}
}

// reset empties the window and starts it at now. The stripes are emptied by the
// transition that resets the window.
func (w *window) reset(now int64) {
	clear(w.buckets)
	clear(w.bits)
	w.cur, w.total = 0, 0
	w.curStart = now
	w.successes, w.failures, w.slow = 0, 0, 0
}

// Counts are the calls measured in the rolling window.
type Counts struct {
	Calls     int64 // successes and failures; ignored calls are not measured
	Failures  int64
	SlowCalls int64
}

// sums returns the window's counts without the successes still in the stripes.
func (w *window) sums() Counts {
	return Counts{Calls: w.successes + w.failures, Failures: w.failures, SlowCalls: w.slow}
}
