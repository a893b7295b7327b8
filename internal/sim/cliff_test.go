package sim_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

func TestCliffRepeatsAndTheAdaptiveLimitKeepsLatencyNearNoLoad(t *testing.T) {
	t.Parallel()
	// The page's scenario (docs/adaptive-concurrency.md). A shorter peak would weigh
	// its onset more: its first second is admitted under the limit in force before it,
	// which the base load never used, and on a one-minute peak those calls alone are
	// more than the 1% of the peak's calls that the p99 leaves out.
	c := sim.Cliff{}
	a, err := sim.RunCliff(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.RunCliff(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Rows, b.Rows) {
		t.Fatalf("two runs differ:\n%s\n%s", a.Table(), b.Table())
	}
	ad, _ := a.Row(sim.CliffAdaptive)
	bh, _ := a.Row(sim.CliffBulkhead)
	none, _ := a.Row(sim.CliffNoLimit)
	if ad.P99 > 2*a.Cliff.Service || bh.P99 <= 2*a.Cliff.Service {
		t.Errorf("p99: adaptive %v, bulkhead %v; want only the adaptive row within 2× %v\n%s", ad.P99, bh.P99, a.Cliff.Service, a.Table())
	}
	if none.Goodput >= ad.Goodput || none.TimedOut == 0 {
		t.Errorf("no limit: goodput %.1f, %d timed out; want it off the cliff\n%s", none.Goodput, none.TimedOut, a.Table())
	}
	if ad.Limit < a.Cliff.Capacity || ad.Limit > 2*a.Cliff.Capacity {
		t.Errorf("adaptive limit %d at the end of the peak, want it near the capacity %d", ad.Limit, a.Cliff.Capacity)
	}
}

func TestCliffBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		c     sim.Cliff
		field string
	}{
		{"capacity", sim.Cliff{Capacity: -1}, "Capacity"},
		{"timeout", sim.Cliff{Timeout: time.Millisecond}, "Timeout"},
		{"rate", sim.Cliff{PeakRate: -3}, "PeakRate"},
		{"peer", sim.Cliff{Peers: []sim.LimitPeer{{Name: "x"}}}, "Peers[0]"},
	} {
		_, err := sim.RunCliff(tt.c)
		var ce *sim.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Errorf("%s: %v, want a ConfigError on %s", tt.name, err, tt.field)
		}
	}
	if _, err := sim.RunHangIncident(sim.HangIncident{Bulkhead: -1}); err == nil {
		t.Error("a negative bulkhead must be refused")
	}
}

func TestHangIncidentTheLimitCutsTheBleedBeforeTheTrip(t *testing.T) {
	t.Parallel()
	r, err := sim.RunHangIncident(sim.HangIncident{})
	if err != nil {
		t.Fatal(err)
	}
	today, _ := r.Row(sim.HangToday)
	with, _ := r.Row(sim.HangAdaptive)
	if today.TripAfter == 0 || with.TripAfter == 0 {
		t.Fatalf("a row never tripped\n%s", r.Table())
	}
	if with.Sent >= today.Sent || with.BlockedWorkerSeconds >= today.BlockedWorkerSeconds || with.Refused == 0 {
		t.Errorf("the adaptive limit sent %d calls and blocked %.1f worker-s (today %d, %.1f), refusing %d\n%s",
			with.Sent, with.BlockedWorkerSeconds, today.Sent, today.BlockedWorkerSeconds, with.Refused, r.Table())
	}
}
