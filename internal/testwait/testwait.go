package testwait

import (
	"testing"
	"time"
)

// Bound is the longest a helper of this package waits.
const Bound = 30 * time.Second

// Recv receives one value from ch, or fails the test after Bound, naming what. Call
// it from the test's goroutine (it calls t.Fatalf).
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited %v for %s", Bound, what)
		panic("unreachable")
	}
}
