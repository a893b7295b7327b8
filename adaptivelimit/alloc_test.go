package adaptivelimit_test

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// The admitted path allocates nothing: Acquire and Done on the system clock, and the
// At forms, including the updates they run.
func TestAdmittedPathAllocatesNothing(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{MinSamples: 1, UpdateInterval: time.Millisecond})
	if n := testing.AllocsPerRun(1000, func() {
		p, err := l.Acquire(throttle.Normal)
		if err != nil {
			t.Fatal(err)
		}
		p.Done()
	}); n != 0 {
		t.Errorf("Acquire+Done: %v allocations, want 0", n)
	}
	now := t0
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		p, err := l.AcquireAt(now, throttle.High)
		if err != nil {
			t.Fatal(err)
		}
		p.DoneAt(now.Add(time.Millisecond))
	}); n != 0 {
		t.Errorf("AcquireAt+DoneAt with an update each call: %v allocations, want 0", n)
	}
}
