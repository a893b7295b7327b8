package breaker

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// The rolling window. Failures and slow calls are rare and go through the breaker's
// mutex into a ring of buckets. Successes are the hot path: they are added to one of
// the breaker's striped counters and folded into the ring when the current bucket ends,
// so concurrent callers on different cores do not write the same cache line.
//
// The stripes live in a shared arena rather than in each breaker: one arena chunk holds
// stripeCount cache lines, and line i holds stripe i of eight breakers. A breaker then
// costs 8 bytes per stripe instead of a padded 64, which is what keeps it under 1 KiB
// with sixteen stripes, and callers only contend when their goroutines pick the same
// stripe, whichever breakers they call.

const (
	stripeCount = 16 // a power of two
	arenaCols   = 8  // breakers per chunk: one 64-byte line holds a stripe of each
)

type arenaChunk [stripeCount][arenaCols]atomic.Int64

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
// 1 KiB, a size class of its own, so it starts on a cache-line boundary.
func allocStripes() stripes {
	arena.mu.Lock()
	defer arena.mu.Unlock()
	if n := len(arena.free); n > 0 {
		s := arena.free[n-1]
		arena.free = arena.free[:n-1]
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

func (s stripes) at(i int) *atomic.Int64 { return &s.chunk[i][s.col] }

// add counts one success on the caller's stripe.
func (s stripes) add() { s.chunk[stripeIndex()][s.col&(arenaCols-1)].Add(1) } // the mask drops a bounds check

// stripeIndex picks a stripe from the address of the caller's stack. Goroutines have
// separate stacks (2 KiB apart at the least), so bits 11 and up differ between
// goroutines. This needs no per-goroutine state and no call into the runtime (pinning
// to a P costs about 3 ns, as much as the rest of the hot path); two concurrent callers
// on one stripe only share a cache line, they never lose a count.
func stripeIndex() int {
	var marker byte
	return int(uintptr(unsafe.Pointer(&marker))>>11) & (stripeCount - 1)
}

// bucket counts one slice of the window. uint32 keeps the ring small; a bucket would
// need four billion failures to wrap.
type bucket struct {
	successes uint32 // successes folded in from the stripes, plus slow successes
	failures  uint32
	slow      uint32
}

// window is guarded by the breaker's mutex, except for the stripes and the bucket end,
// which the hot path reads and writes atomically.
type window struct {
	width    int64 // bucket width in nanoseconds
	buckets  []bucket
	cur      int   // index of the current bucket
	curStart int64 // start of the current bucket

	// Sums over the ring. Successes still sitting in the stripes are not in them.
	successes, failures, slow int64
}

func newWindow(p Policy, now int64) window {
	return window{
		width:    int64(p.Window) / int64(p.Buckets),
		buckets:  make([]bucket, p.Buckets),
		curStart: now,
	}
}

func (w *window) end() int64 { return w.curStart + w.width }

// fold moves the striped successes into the current bucket.
func (w *window) fold(s stripes) {
	var sum int64
	for i := range stripeCount {
		if c := s.at(i); c.Load() != 0 {
			sum += c.Swap(0)
		}
	}
	if sum > 0 {
		w.buckets[w.cur].successes += uint32(sum)
		w.successes += sum
	}
}

// advance folds the stripes and slides the window so that now falls in the current
// bucket. A clock that went backwards slides nothing.
func (w *window) advance(now int64, stripes stripes) {
	if now < w.end() {
		return
	}
	w.fold(stripes)
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

// add records one measured call in the current bucket.
func (w *window) add(failed, slow bool) {
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

// reset empties the window and starts its first bucket at now.
func (w *window) reset(now int64, s stripes) {
	for i := range stripeCount {
		s.at(i).Store(0)
	}
	clear(w.buckets)
	w.cur = 0
	w.curStart = now
	w.successes, w.failures, w.slow = 0, 0, 0
}

// Counts are the calls measured in the rolling window.
type Counts struct {
	Calls     int64 // successes and failures; ignored calls are not measured
	Failures  int64
	SlowCalls int64
}

// counts sums the ring and the stripes.
func (w *window) counts(s stripes) Counts {
	var pending int64
	for i := range stripeCount {
		pending += s.at(i).Load()
	}
	return Counts{Calls: w.successes + pending + w.failures, Failures: w.failures, SlowCalls: w.slow}
}
