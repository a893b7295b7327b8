package throttle

import "sync/atomic"

// The window is a ring of buckets, each one 64-bit word: the bucket's epoch (which
// bucket-width slice of time since the throttle's start it counts) in the top bits, then
// requests, then accepts. A report is one compare-and-swap on the word of the bucket
// now falls in; finding a word of an older epoch there, it starts the bucket afresh in
// the same swap, so sliding the window needs no lock and no sweeper.
const (
	countBits  = 24
	countMax   = 1<<countBits - 1
	reqShift   = countBits
	epochShift = 2 * countBits
	epochBits  = 64 - epochShift
	epochMask  = 1<<epochBits - 1
	// maxBuckets keeps "older than the window" unambiguous when epochs wrap.
	maxBuckets = 1 << (epochBits - 2)
)

type window struct {
	width int64 // nanoseconds per bucket
	slots []atomic.Uint64
	// cur is the last bucket a caller found, epoch<<slotBits | slot, so that a report
	// inside it pays neither the division for its epoch nor the one for its slot.
	cur atomic.Int64
}

// slotBits holds a slot index (maxBuckets is below 1<<slotBits).
const slotBits = 14

// epochOf returns the bucket epoch of now (nanoseconds since the throttle's start).
func (w *window) epochOf(now int64) int64 {
	e, _ := w.bucketOf(now)
	return e
}

// bucketOf returns the bucket epoch of now and its slot in the ring.
func (w *window) bucketOf(now int64) (e int64, slot int) {
	if now < 0 {
		now = 0
	}
	c := w.cur.Load()
	e, slot = c>>slotBits, int(c&(1<<slotBits-1))
	if d := now - e*w.width; d >= 0 && d < w.width {
		return e, slot
	}
	e = now / w.width
	slot = int(uint64(e) % uint64(len(w.slots)))
	w.cur.Store(e<<slotBits | int64(slot))
	return e, slot
}

// addAt counts one request, accepted or not, in the bucket of epoch e, whose slot in
// the ring is i. It returns the bucket's request count after the add and whether this
// add started the bucket afresh (the window slid). A bucket that is full (2^24
// requests) stops counting: its ratio stays what it was. A report that finds its
// bucket already reused by a later epoch (an injected clock that went back) is dropped.
func (w *window) addAt(e int64, i int, accepted bool) (requests uint64, fresh bool) {
	slot := &w.slots[i]
	tag := uint64(e) & epochMask
	d := uint64(1) << reqShift
	if accepted {
		d |= 1
	}
	for {
		v := slot.Load()
		var nv uint64
		switch st := v >> epochShift; {
		case st == tag:
			if v>>reqShift&countMax == countMax {
				return countMax, false
			}
			nv = v + d
		case (st-tag)&epochMask < epochMask/2 && v != 0:
			return 0, false // the slot belongs to a later epoch
		default:
			nv = tag<<epochShift | d
		}
		if slot.CompareAndSwap(v, nv) {
			return nv >> reqShift & countMax, nv&^(epochMask<<epochShift) == d
		}
	}
}

// sums adds up the buckets of the window that ends in epoch e.
func (w *window) sums(e int64) (requests, accepts uint64) {
	tag := uint64(e) & epochMask
	n := uint64(len(w.slots))
	for i := range w.slots {
		v := w.slots[i].Load()
		if v == 0 {
			continue
		}
		if age := (tag - v>>epochShift) & epochMask; age < n {
			requests += v >> reqShift & countMax
			accepts += v & countMax
		}
	}
	return requests, accepts
}

// reset empties every bucket.
func (w *window) reset() {
	for i := range w.slots {
		w.slots[i].Store(0)
	}
}
