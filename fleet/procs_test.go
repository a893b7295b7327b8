package fleet_test

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// fleetOf returns a Fleet handle (never started on a breaker) for key names.
func fleetOf(t *testing.T, addr, app string) *fleet.Fleet {
	t.Helper()
	return newFleet(t, addr, app, "observer", time.Second)
}

func startReplicas(t *testing.T, n int, spec childSpec) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range rs {
		s := spec
		s.Replica = fmt.Sprintf("r%d", i)
		rs[i] = startReplica(t, s)
	}
	for _, r := range rs {
		select {
		case <-r.ready:
		case <-r.exited:
			t.Fatalf("replica %s exited before it was ready", r.name)
		case <-time.After(20 * time.Second):
			t.Fatalf("replica %s not ready within 20s", r.name)
		}
	}
	for _, r := range rs {
		_, err := r.stdin.Write([]byte("GO\n"))
		require.NoError(t, err)
	}
	return rs
}

func stopReplicas(t *testing.T, rs []*replica) {
	t.Helper()
	for _, r := range rs {
		r.stdin.Close()
	}
	for _, r := range rs {
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("replica %s did not stop", r.name)
		}
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// Eight processes share a dependency that fails from the first call: the fleet trips on
// its summed window, every replica learns within a sync interval, the server receives
// exactly one probe per cooldown from the whole fleet in every round, and when it
// recovers one probe closes every replica.
func TestEightProcessesTripTogetherAndProbeOncePerCooldown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight processes")
	}
	addr, app := testApp(t)
	obs := fleetOf(t, addr, app)
	dep := &dependency{failing: true}
	srv := httptest.NewServer(dep)
	defer srv.Close()
	const (
		n        = 8
		interval = 100 * time.Millisecond
		cooldown = time.Second
		minCalls = 60
	)
	rs := startReplicas(t, n, childSpec{Addr: addr, App: app, URL: srv.URL, Interval: interval,
		Cooldown: cooldown, ProbeLease: 2 * time.Second, CallEvery: 20 * time.Millisecond, MinCalls: minCalls})
	hk := histKey(obs, "search")

	var tripped transition
	testenv.WaitFor(t, 10*time.Second, "the fleet trips", func() bool {
		h := history(t, addr, hk)
		if len(h) > 0 {
			tripped = h[0]
		}
		return len(h) > 0
	})
	require.Equal(t, "open", tripped.To)
	require.Equal(t, "failure_rate", tripped.Cause)
	testenv.WaitFor(t, 10*time.Second, "every replica open", func() bool {
		for _, r := range rs {
			if r.state() == "closed" {
				return false
			}
		}
		return true
	})

	// Four cooldowns of outage, then the dependency recovers.
	time.Sleep(4*cooldown + cooldown/2)
	healedAt := time.Now()
	dep.set(false, false)
	var closed transition
	testenv.WaitFor(t, 10*time.Second, "the fleet closes", func() bool {
		h := history(t, addr, hk)
		if last := h[len(h)-1]; last.To == "closed" {
			closed = last
			return true
		}
		return false
	})
	testenv.WaitFor(t, 10*time.Second, "every replica closed", func() bool {
		for _, r := range rs {
			if r.state() != "closed" {
				return false
			}
		}
		return true
	})
	stopReplicas(t, rs)

	h := history(t, addr, hk)
	checkHistory(t, h)
	reqs := dep.snapshot()

	// When each replica learned of the trip (its first open event).
	learned := map[string]time.Time{}
	for _, r := range rs {
		for _, e := range r.snapshot() {
			if e.To == "open" {
				learned[r.name] = e.At
				break
			}
		}
	}
	require.Len(t, learned, n)

	// Trip on the fleet's window: far fewer failures than eight local windows need.
	var beforeTrip, leaked int
	var probes []request
	for _, rq := range reqs {
		switch {
		case rq.Probe:
			probes = append(probes, rq)
		case rq.At.Before(tripped.At):
			beforeTrip++
		case rq.At.Before(healedAt) && rq.At.After(learned[rq.Replica].Add(200*time.Millisecond)):
			// An ordinary call from a replica that knew of the trip (200ms covers a call
			// admitted just before it learned and still on its way).
			leaked++
		}
	}
	t.Logf("failed calls before the fleet tripped: %d (eight local breakers would need %d)", beforeTrip, n*minCalls)
	require.GreaterOrEqual(t, beforeTrip, minCalls/2, "tripped before the fleet's gates were crossed")
	require.Less(t, beforeTrip, n*minCalls/2)
	require.Zero(t, leaked, "ordinary calls reached the failing server after the trip")

	// Exactly one probe per half-open period, and half-open periods a cooldown apart.
	var halfOpens []transition
	for _, tr := range h {
		if tr.To == "half_open" {
			halfOpens = append(halfOpens, tr)
		}
	}
	require.GreaterOrEqual(t, len(halfOpens), 4, "%+v", h)
	require.Len(t, probes, len(halfOpens), "probes %+v\nhistory %+v", probes, h)
	for i, ho := range halfOpens {
		p := probes[i]
		require.Equal(t, ho.By, p.Replica, "probe %d came from a replica without the lease", i)
		require.False(t, p.At.Before(ho.At.Add(-5*time.Millisecond)), "probe %d before its lease", i)
		if i+1 < len(halfOpens) {
			require.True(t, p.At.Before(halfOpens[i+1].At), "two probes in one round")
			require.GreaterOrEqual(t, halfOpens[i+1].At.Sub(ho.At), cooldown-5*time.Millisecond)
		}
	}
	require.Equal(t, "probe_succeeded", closed.Cause)

	// Propagation: from the fleet's transition to each other replica's local one.
	var lags []time.Duration
	for _, tr := range []transition{tripped, closed} {
		for _, r := range rs {
			if r.name == tr.By {
				continue
			}
			for _, e := range r.snapshot() {
				if e.To == tr.To && !e.At.Before(tr.At.Add(-time.Second)) {
					lags = append(lags, max(e.At.Sub(tr.At), 0))
					break
				}
			}
		}
	}
	require.Len(t, lags, 2*(n-1))
	p50, p99 := percentile(lags, 0.5), percentile(lags, 0.99)
	t.Logf("propagation over %d replica-transitions: p50 %s, p99 %s (sync interval %s); %d probes in %d rounds",
		len(lags), p50, p99, interval, len(probes), len(halfOpens))
	require.Less(t, p99, 2*time.Second, "a replica learned late (a generous bound: the figure is logged)")
}

// A replica killed in the middle of its probe: no other replica probes until its lease
// expires, then exactly one does.
func TestKilledProberFreesTheProbeWhenItsLeaseExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	addr, app := testApp(t)
	obs := fleetOf(t, addr, app)
	dep := &dependency{failing: true, hangProbe: true}
	srv := httptest.NewServer(dep)
	defer srv.Close()
	const (
		lease    = time.Second
		interval = 100 * time.Millisecond
	)
	rs := startReplicas(t, 3, childSpec{Addr: addr, App: app, URL: srv.URL, Interval: interval,
		Cooldown: 300 * time.Millisecond, ProbeLease: lease, CallEvery: 20 * time.Millisecond, MinCalls: 10})

	probes := func() []request {
		var out []request
		for _, rq := range dep.snapshot() {
			if rq.Probe {
				out = append(out, rq)
			}
		}
		return out
	}
	testenv.WaitFor(t, 10*time.Second, "a first probe", func() bool { return len(probes()) > 0 })
	first := probes()[0]
	var victim *replica
	for _, r := range rs {
		if r.name == first.Replica {
			victim = r
		}
	}
	require.NotNil(t, victim)
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	<-victim.exited
	dep.set(true, false) // later probes fail at once

	testenv.WaitFor(t, 10*time.Second, "a second probe", func() bool { return len(probes()) > 1 })
	second := probes()[1]
	h := history(t, addr, histKey(obs, "search"))
	checkHistory(t, h)
	var leased transition
	for _, tr := range h {
		if tr.To == "half_open" && tr.By == first.Replica {
			leased = tr
		}
	}
	require.Equal(t, "half_open", leased.To, "%+v", h)
	require.NotEqual(t, first.Replica, second.Replica)
	require.False(t, second.At.Before(leased.At.Add(lease-5*time.Millisecond)),
		"second probe %s after the lease was taken, before it expired (%s)", second.At.Sub(leased.At), lease)
	t.Logf("second probe %s after the killed replica took the lease (lease %s)", second.At.Sub(leased.At), lease)
	var relet bool
	for _, tr := range h {
		relet = relet || tr.Cause == "probe_lease_expired" && tr.By == second.Replica
	}
	require.True(t, relet, "%+v", h)

	var alive []*replica
	for _, r := range rs {
		if r != victim {
			alive = append(alive, r)
		}
	}
	stopReplicas(t, alive)
}
