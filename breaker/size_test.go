package breaker

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

// sizeClass rounds n up to Go's small-object size classes (runtime/sizeclasses.go).
func sizeClass(n int) int {
	for _, c := range []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
		288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048} {
		if n <= c {
			return c
		}
	}
	return n
}

// TestStripesKeepOffTheChunksFirstLine: the stripes start one cache line into their
// chunk (see arenaChunk), which still fits the chunk's size class, and every chunk
// starts on a cache-line boundary, so no stripe shares the chunk's first line.
func TestStripesKeepOffTheChunksFirstLine(t *testing.T) {
	var c arenaChunk
	if off := unsafe.Offsetof(c.lines); off != 64 {
		t.Errorf("stripes start %d bytes into the chunk, want 64", off)
	}
	if size := unsafe.Sizeof(c); sizeClass(int(size)) != 1152 {
		t.Errorf("a chunk of %d bytes is in the %d-byte size class, want 1152", size, sizeClass(int(size)))
	}
	for range 64 {
		s := allocStripes()
		if addr := uintptr(unsafe.Pointer(s.chunk)); addr%64 != 0 {
			t.Errorf("chunk at %#x is not on a cache-line boundary", addr)
		}
		defer releaseStripes(s)
	}
}

// TestBreakerStructHasNoMallocHeader: the allocator gives an object with pointers
// above 512 bytes an 8-byte header, so a 576-byte Breaker took a 640-byte slot. At 512
// bytes or less it takes no more than its size class (TestBreakerFitsInOneKiB measures
// the whole breaker).
func TestBreakerStructHasNoMallocHeader(t *testing.T) {
	if size := unsafe.Sizeof(Breaker{}); size > 512 {
		t.Errorf("a Breaker is %d bytes: above 512 it gets a malloc header and the next size class", size)
	}
}

// TestLeaseTokensSkipZeroWhenTheyWrap: a token is 32 bits and 0 marks a free lease
// slot, so the token after the last one is 1.
func TestLeaseTokensSkipZeroWhenTheyWrap(t *testing.T) {
	b := MustNew(Config{Name: "wrap", Policy: Policy{MinimumCalls: 1, Jitter: -1, Cooldown: time.Second}})
	p, _ := b.Allow()
	p.Failure()
	b.mu.Lock()
	b.nextToken = math.MaxUint32
	b.mu.Unlock()
	pr, err := b.AllowProbeAt(b.now().Add(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	tok := b.leases[0].token
	b.mu.Unlock()
	if tok&^healthToken != 1 {
		t.Errorf("the token after the last is %d, want 1", tok&^healthToken)
	}
	pr.Success()
	if b.State() != Closed {
		t.Errorf("the probe with the wrapped token did not close the breaker: %s", b.State())
	}
}
