package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// SetConfig retunes K and MinRequests while the throttle keeps its window, and
// refuses a new window or a bad value whole.
func TestSetConfigRetunesAndKeepsTheWindow(t *testing.T) {
	th := throttle.MustNew(throttle.Config{Clock: clock.NewFake(time.Time{}), K: 2, MinRequests: 20})
	for i := range 100 {
		th.Report(i%4 == 0) // a quarter accepted
	}
	if p := th.Probability(); p <= 0 {
		t.Fatalf("probability %v at K=2, want shedding", p)
	}
	if err := th.SetConfig(throttle.Config{K: 5, MinRequests: 20}); err != nil {
		t.Fatal(err)
	}
	if p, c := th.Probability(), th.Counts(); p != 0 || c.Requests != 100 {
		t.Errorf("probability %v with counts %+v at K=5, want 0 over the kept 100 requests", p, c)
	}
	var ce *agentbreaker.ConfigError
	for _, bad := range []throttle.Config{{K: 0.5}, {K: 2, Window: time.Minute}} {
		if err := th.SetConfig(bad); !errors.As(err, &ce) {
			t.Errorf("SetConfig(%+v) = %v, want a ConfigError", bad, err)
		}
	}
	if p := th.Probability(); p != 0 {
		t.Errorf("a refused SetConfig changed K: probability %v", p)
	}
}
