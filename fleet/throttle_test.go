package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// throttledMap is one replica's dependency map: search has a throttle.
func throttledMap(t *testing.T) (*dependencymap.Map, *throttle.Throttle) {
	t.Helper()
	m := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Policy: testPolicy(time.Minute), Throttle: &throttle.Config{K: 2, MinRequests: 10}},
	}})
	th, ok := m.Throttle("search")
	require.True(t, ok)
	return m, th
}

// waitUntil polls cond every 10ms for at most d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 25 (d): the share shed comes from the fleet's window, so a replica that saw no
// failure sheds as the one that saw them all, and both shed the same share.
func TestThrottleShedsByTheFleetsWindow(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	fa := newFleet(t, addr, app, "a", 50*time.Millisecond)
	fb := newFleet(t, addr, app, "b", 50*time.Millisecond)
	ma, tha := throttledMap(t)
	mb, thb := throttledMap(t)
	require.NoError(t, fa.AttachMap(ma))
	require.NoError(t, fb.AttachMap(mb))

	// Replica a's calls: 100 sent, 20 handled. Replica b: 20 sent, all handled.
	for i := range 100 {
		tha.Report(i < 20)
	}
	for range 20 {
		thb.Report(true)
	}
	// Alone, a would shed (100-40)/101 and b nothing; over the fleet's window both shed
	// (120 - 2·40)/121.
	want := (120 - 2*40) / 121.0
	// Regression: b's own calls all succeed, so only the sync can make it shed.
	waitUntil(t, 5*time.Second, "b to shed although it saw no failure", thb.Shedding)
	waitUntil(t, 5*time.Second, "both replicas to shed the fleet's share", func() bool {
		return near(tha.Probability(), want) && near(thb.Probability(), want)
	})

	// A replica that leaves stops counting once its report is older than LocalAfter:
	// b goes back to its own window, which sheds nothing.
	require.NoError(t, fa.Close())
	waitUntil(t, 5*time.Second, "a's report to age out", func() bool { return thb.Probability() == 0 })
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestAttachThrottleRefusesADuplicateName(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	f := newFleet(t, addr, app, "a", time.Second)
	_, th1 := throttledMap(t)
	_, th2 := throttledMap(t)
	require.NoError(t, f.AttachThrottle(th1))
	require.NoError(t, f.AttachThrottle(th1), "attaching twice is a no-op")
	require.ErrorContains(t, f.AttachThrottle(th2), `a throttle named "search" is already attached`)
}
