package callbacks

import (
	"hash/maphash"
	"sync/atomic"
)

// invBuckets is the number of buckets of an invTable: a power of two, large enough that
// a busy server's few thousand live invocations leave most buckets with one or none.
const invBuckets = 1024

// invTable maps invocation IDs to their state with no lock (issue 27e). Every turn of
// every session creates one invocation, so under many concurrent sessions a map with a
// mutex, even sync.Map's fine-grained ones, is where turns wait for each other.
//
// Each bucket is an immutable linked list published by compare-and-swap. Inserting
// pushes the invocation's own node at the head (no allocation); deleting swaps in the
// list without the node, copying only the nodes in front of it, which with short
// buckets is almost never any. A node, once removed, is never published again, so a
// compare-and-swap cannot succeed on a head that was removed and restored (no ABA).
type invTable struct {
	seed    maphash.Seed
	buckets [invBuckets]atomic.Pointer[invNode]
}

// invNode is one entry of a bucket's list. It is not changed once published.
type invNode struct {
	inv  *invocation
	next *invNode
}

func newInvTable() *invTable { return &invTable{seed: maphash.MakeSeed()} }

func (t *invTable) bucket(id string) *atomic.Pointer[invNode] {
	return &t.buckets[maphash.String(t.seed, id)&(invBuckets-1)]
}

func find(n *invNode, id string) *invocation {
	for ; n != nil; n = n.next {
		if n.inv.id == id {
			return n.inv
		}
	}
	return nil
}

// load returns the invocation with id, or nil.
func (t *invTable) load(id string) *invocation { return find(t.bucket(id).Load(), id) }

// loadOrStore returns the invocation with inv's ID, storing inv when there is none;
// loaded reports whether another one was found. inv must not have been stored before.
func (t *invTable) loadOrStore(inv *invocation) (_ *invocation, loaded bool) {
	b := t.bucket(inv.id)
	for {
		head := b.Load()
		if found := find(head, inv.id); found != nil {
			return found, true
		}
		inv.node = invNode{inv: inv, next: head} // unpublished: ours to write
		if b.CompareAndSwap(head, &inv.node) {
			return inv, false
		}
	}
}

// loadAndDelete removes the invocation with id and returns it, or nil.
func (t *invTable) loadAndDelete(id string) *invocation {
	b := t.bucket(id)
	for {
		head := b.Load()
		n, before := head, 0
		for ; n != nil && n.inv.id != id; n = n.next {
			before++
		}
		if n == nil {
			return nil
		}
		rest := n.next
		if before > 0 { // copy the nodes in front of n onto the rest, in their order
			ahead := make([]*invocation, 0, before)
			for m := head; m != n; m = m.next {
				ahead = append(ahead, m.inv)
			}
			for i := len(ahead) - 1; i >= 0; i-- {
				rest = &invNode{inv: ahead[i], next: rest}
			}
		}
		if b.CompareAndSwap(head, rest) {
			return n.inv
		}
	}
}

// each calls f for every stored invocation until f returns false. Invocations stored
// or deleted meanwhile may or may not be seen, as with sync.Map's Range.
func (t *invTable) each(f func(*invocation) bool) {
	for i := range t.buckets {
		for n := t.buckets[i].Load(); n != nil; n = n.next {
			if !f(n.inv) {
				return
			}
		}
	}
}
