package throttle

import _ "unsafe" // for go:linkname

// cheaprand64 is the runtime's per-thread wyrand generator: no lock, no shared cache
// line, about a nanosecond. math/rand/v2's top-level functions draw from the runtime's
// per-thread ChaCha8 instead, several times the cost, for a quality a shedding decision
// does not need. The runtime keeps this symbol reachable by linkname (go.dev/issue/67401).
//
//go:linkname cheaprand64 runtime.cheaprand64
func cheaprand64() int64
