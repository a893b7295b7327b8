package breaker

import (
	"testing"
	"unsafe"
)

// breakerBytes is the memory one breaker holds: the struct, its share of the stripe
// arena, its bucket ring and its probe slots, rounded up to the allocator's size classes that Go would use for them.
func breakerBytes(p Policy) int {
	p = p.WithDefaults()
	var b Breaker
	return sizeClass(int(unsafe.Sizeof(b))) +
		sizeClass(int(unsafe.Sizeof(arenaChunk{})))/arenaCols + // its column of the shared stripe arena
		windowBytes(p) +
		sizeClass(p.HalfOpenProbes*int(unsafe.Sizeof(lease{})))
}

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

// windowBytes is the memory of the window's ring: buckets, or bits for a count window.
func windowBytes(p Policy) int {
	if p.WindowCalls > 0 {
		words := (p.WindowCalls + 63) / 64
		n := sizeClass(words * 8)
		if p.SlowCallThreshold > 0 {
			n *= 2
		}
		return n
	}
	return sizeClass(p.Buckets * int(unsafe.Sizeof(bucket{})))
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
