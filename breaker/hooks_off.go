//go:build !breakerhooks

package breaker

// hook marks a point between two steps of a lock-free path. Without the breakerhooks
// build tag it is empty and inlined away; with it, tests can pause a goroutine there
// (see hooks_on.go).
func hook(hookPoint) {}
