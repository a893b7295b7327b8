//go:build breakerhooks

package breaker

import "sync/atomic"

// hooks holds the function a test installed at each point, or nil.
var hooks [hookPoints]atomic.Pointer[func()]

func hook(p hookPoint) {
	if f := hooks[p].Load(); f != nil {
		(*f)()
	}
}

// setHook installs f at p (nil removes it) and returns a function that removes it.
func setHook(p hookPoint, f func()) func() {
	if f == nil {
		hooks[p].Store(nil)
		return func() {}
	}
	hooks[p].Store(&f)
	return func() { hooks[p].Store(nil) }
}
