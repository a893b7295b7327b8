// Package attach lets a package take a listener after construction without exporting
// a method for it: the package registers, in its init, a function that adds a
// listener of type L to a value of type T, and the telemetry's Wire calls Add. Only
// this module's packages can import it, so the public surface does not grow.
package attach

import (
	"reflect"
	"sync"
)

var (
	mu  sync.RWMutex
	fns = map[reflect.Type]any{}
)

// Register makes Add[T, L] call add. It is called from package init functions.
func Register[T, L any](add func(T, L) bool) {
	mu.Lock()
	defer mu.Unlock()
	fns[reflect.TypeFor[func(T, L) bool]()] = add
}

// Add adds l to t through the function registered for T and L, and reports whether it
// did: false when none is registered or the function declined (for example, l is
// already t's own listener).
func Add[T, L any](t T, l L) bool {
	mu.RLock()
	f, ok := fns[reflect.TypeFor[func(T, L) bool]()].(func(T, L) bool)
	mu.RUnlock()
	return ok && f(t, l)
}
