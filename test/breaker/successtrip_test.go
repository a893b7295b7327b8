package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// TestTripBySuccessReadsThePreciseClock checks, on the default clock and on
// clock.System() (documented as the same), that the instant a breaker opens is read
// precisely, also when a success trips it:
//   - Config.Clock: "every decision taken under the lock, and every timed call, reads it
//     precisely";
//   - package doc: a success "takes the breaker's lock ... while one more success could
//     trip the breaker", and "three failures then a success, under a gate of four" trip;
//   - Policy.Cooldown: "how long the breaker stays open before it lets a probe through".
//
// So the breaker must record its opening (Snapshot.OpenedAt) no earlier than the
// tripping report was made, and its reopen time (OpenError.Until) no earlier than
// Cooldown after that. The same check on a trip by a failure is the control.
//
// It fails if the trip takes its time from the coarse clock's stale reading: the open
// period then starts before the report that caused it, and the breaker lets its probe
// through before Cooldown has passed since the trip.
func TestTripBySuccessReadsThePreciseClock(t *testing.T) {
	const (
		cooldown = time.Second // long enough that the rejection below always comes first
		trials   = 200
	)
	for _, c := range []struct {
		name string
		clk  clock.Clock
	}{{"nil", nil}, {"System", clock.System()}} {
		for _, last := range []breaker.Verdict{breaker.Failure, breaker.Success} {
			t.Run(c.name+"/TripBy"+map[breaker.Verdict]string{breaker.Failure: "Failure", breaker.Success: "Success"}[last], func(t *testing.T) {
				for i := 0; i < trials; i++ {
					b := breaker.MustNew(breaker.Config{Name: "trip", Clock: c.clk, Policy: breaker.Policy{
						FailureRateThreshold: 0.5, MinimumCalls: 4, Cooldown: cooldown, Jitter: -1,
					}})
					// Three failures, or a success and two failures, then the last call.
					for j := 0; j < 3; j++ {
						p, err := b.Allow()
						if err != nil {
							t.Fatalf("closed breaker rejected a call: %v", err)
						}
						if last == breaker.Failure && j == 0 {
							p.Success()
						} else {
							p.Failure()
						}
					}
					if i%4 == 0 {
						// Give the coarse clock time to fall behind, as between real calls.
						time.Sleep(200 * time.Microsecond)
					}
					p, err := b.Allow()
					if err != nil {
						t.Fatalf("closed breaker rejected the 4th call: %v", err)
					}
					reported := time.Now()
					p.Report(breaker.Report{Verdict: last})
					after := time.Now()
					snap := b.Snapshot()
					if snap.State != breaker.Open {
						t.Fatalf("trial %d: 75%% over 4 calls under a gate of 4: state %v, want open", i, snap.State)
					}
					if snap.OpenedAt.Before(reported) || snap.OpenedAt.After(after) {
						t.Fatalf("trial %d: Snapshot.OpenedAt is %v after the tripping report began (want within [0, %v]): "+
							"the trip did not read the clock precisely", i, snap.OpenedAt.Sub(reported), after.Sub(reported))
					}
					_, err = b.Allow()
					var oe *breaker.OpenError
					if !errors.As(err, &oe) {
						t.Fatalf("trial %d: open breaker answered %v, want an *OpenError", i, err)
					}
					if oe.Until.Before(reported.Add(cooldown)) {
						t.Fatalf("trial %d: OpenError.Until is %v after the tripping report began, want at least the cooldown %v",
							i, oe.Until.Sub(reported), cooldown)
					}
				}
			})
		}
	}
}
