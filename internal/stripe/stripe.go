package stripe

import (
	"unsafe"
)

// Bits is log2 of Count.
const Bits = 4

// Count is how many stripes a striped counter has.
const Count = 1 << Bits

// ByStack picks a stripe from the address of the caller's stack. Goroutines have
// separate stacks (2 KiB apart at the least), so bits 11 and up differ between
// goroutines; stacks are power-of-two sized and aligned, so bits 11 to 14 alone often
// agree between two goroutines, and a multiplicative (Fibonacci) hash of all the bits
// above 11 spreads them instead. This needs no per-goroutine state and no call into the
// runtime; two concurrent callers on one stripe only share a cache line, they never
// lose a count (callers that see them meet move to ByProcessor). A goroutine whose
// stack grows is copied to a new address and may get another stripe, so a caller
// that must undo on the same stripe records the index.
func ByStack() int {
	var marker byte
	h := uint64(uintptr(unsafe.Pointer(&marker))>>11) * 0x9E3779B97F4A7C15
	return int(h >> (64 - Bits))
}

// ByProcessor picks the stripe of the processor (the runtime's P) running the caller.
// The caller may be moved to another processor right after; that only costs sharing a
// line for a moment, never a count.
func ByProcessor() int {
	p := runtime_procPin()
	runtime_procUnpin()
	return p & (Count - 1)
}

// The runtime's processor pinning, as sync.Pool uses it. The runtime keeps these two
// reachable by linkname for packages outside the standard library.
//
//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()
