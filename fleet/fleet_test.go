package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// Two replicas in one process, each with its own client: a trip on one reaches the
// other within a sync, one of them probes after the cooldown, and its success closes
// both.
func TestTripReachesEveryReplicaAndOneProbeCloses(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	const interval = 100 * time.Millisecond
	fa, fb := newFleet(t, addr, app, "a", interval), newFleet(t, addr, app, "b", interval)
	a := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(500 * time.Millisecond)})
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(500 * time.Millisecond)})
	require.NoError(t, fa.Attach(a))
	require.NoError(t, fb.Attach(b))
	testenv.WaitFor(t, 5*time.Second, "both fleet-wide", func() bool {
		sa, _ := fa.Status("crm")
		sb, _ := fb.Status("crm")
		return sa.FleetWide && sb.FleetWide
	})
	fail(a, 10)
	require.Equal(t, breaker.Open, a.State())
	testenv.WaitFor(t, 5*time.Second, "b learns of a's trip", func() bool { return b.State() == breaker.Open })

	// After the cooldown, both want to call; exactly one probes.
	probes := 0
	testenv.WaitFor(t, 5*time.Second, "a probe", func() bool {
		for _, x := range []*breaker.Breaker{a, b} {
			if p, err := x.Allow(); err == nil {
				require.True(t, p.IsProbe())
				probes++
				p.Success()
			}
		}
		return probes > 0
	})
	testenv.WaitFor(t, 5*time.Second, "both closed", func() bool {
		return a.State() == breaker.Closed && b.State() == breaker.Closed
	})
	require.Equal(t, 1, probes)
	h := history(t, addr, histKey(fa, "crm"))
	checkHistory(t, h)
	require.Len(t, h, 3, "%+v", h)
}

// Breakers a dependency map creates on demand join the fleet at the next sync.
func TestAttachMapPicksUpBreakersCreatedOnDemand(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	f := newFleet(t, addr, app, "a", 50*time.Millisecond)
	deps := dependencymap.MustNew(dependencymap.Config{PolicyVersion: "v1",
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	require.NoError(t, f.AttachMap(deps))
	_, ok := f.Status("crm")
	require.True(t, ok)
	_, ok = f.Status("web_search")
	require.False(t, ok)
	_, err := deps.ForTool("web_search") // unannotated: its own breaker, created now
	require.NoError(t, err)
	model, err := deps.ForModel("gemini-2.5-flash", "europe-west4") // model routes too
	require.NoError(t, err)
	for _, name := range []string{"web_search", model.Name()} {
		testenv.WaitFor(t, 5*time.Second, name+" is fleet-wide", func() bool {
			s, ok := f.Status(name)
			return ok && s.FleetWide
		})
	}
}

// A delay the dependency stated to one replica holds for every replica.
func TestRetryAfterFloorsTheWholeFleet(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	fa, fb := newFleet(t, addr, app, "a", 50*time.Millisecond), newFleet(t, addr, app, "b", 50*time.Millisecond)
	a := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Second)})
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Second)})
	require.NoError(t, fa.Attach(a))
	require.NoError(t, fb.Attach(b))
	testenv.WaitFor(t, 5*time.Second, "both fleet-wide", func() bool {
		sa, _ := fa.Status("crm")
		sb, _ := fb.Status("crm")
		return sa.FleetWide && sb.FleetWide
	})
	late, err := a.Allow()
	require.NoError(t, err)
	fail(a, 10)
	testenv.WaitFor(t, 5*time.Second, "b open", func() bool { return b.State() == breaker.Open })
	require.Less(t, b.RetryAfter(), 2*time.Second)
	late.Report(breaker.Report{Verdict: breaker.Failure, RetryAfter: time.Minute})
	testenv.WaitFor(t, 5*time.Second, "b waits the minute a was told", func() bool {
		return b.RetryAfter() > 50*time.Second
	})
}

// ForceClosed on one replica switches the breaker off on every replica; Reset puts
// every replica back to closed.
func TestOperatorActionsApplyFleetWide(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	fa, fb := newFleet(t, addr, app, "a", 50*time.Millisecond), newFleet(t, addr, app, "b", 50*time.Millisecond)
	a := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Second)})
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Second)})
	require.NoError(t, fa.Attach(a))
	require.NoError(t, fb.Attach(b))
	a.ForceClosed("maintenance")
	testenv.WaitFor(t, 5*time.Second, "b forced closed", func() bool { return b.State() == breaker.ForcedClosed })
	fail(b, 20)
	require.Equal(t, breaker.ForcedClosed, b.State(), "a forced-closed breaker never trips")
	b.ForceOpen("incident")
	testenv.WaitFor(t, 5*time.Second, "a forced open", func() bool { return a.State() == breaker.ForcedOpen })
	a.Reset("over")
	testenv.WaitFor(t, 5*time.Second, "b closed", func() bool { return b.State() == breaker.Closed })
	checkHistory(t, history(t, addr, histKey(fa, "crm")))
}

// Redis restarted without its data (the breaker's keys are gone): the replicas do not
// follow a fleet that forgot; they publish their open state again.
func TestRedisLosingItsDataKeepsTheFleetOpen(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	fa, fb := newFleet(t, addr, app, "a", 50*time.Millisecond), newFleet(t, addr, app, "b", 50*time.Millisecond)
	var closedEvents atomic.Int64
	onClose := []func(breaker.Event){func(e breaker.Event) {
		if e.To == breaker.Closed {
			closedEvents.Add(1)
		}
	}}
	a := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute), OnStateChange: onClose})
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute), OnStateChange: onClose})
	require.NoError(t, fa.Attach(a))
	require.NoError(t, fb.Attach(b))
	fail(a, 10) // before a's first sync: its trip still opens the fleet
	testenv.WaitFor(t, 5*time.Second, "b open", func() bool { return b.State() == breaker.Open })
	testenv.WaitFor(t, 5*time.Second, "both at generation 1", func() bool {
		sa, _ := fa.Status("crm")
		sb, _ := fb.Status("crm")
		return sa.Generation == 1 && sb.Generation == 1
	})

	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	prefix := fa.KeyPrefix("v1", "crm")
	require.NoError(t, c.Del(context.Background(), prefix+"state", prefix+"win", prefix+"lease", prefix+"hist").Err())

	testenv.WaitFor(t, 5*time.Second, "the fleet is open again in Redis", func() bool {
		h := history(t, addr, histKey(fa, "crm"))
		return len(h) == 1 && h[0].To == "open"
	})
	waitSyncs(t, 3, fa, fb)
	require.Equal(t, breaker.Open, a.State())
	require.Equal(t, breaker.Open, b.State())
	require.Zero(t, closedEvents.Load(), "a replica followed the empty Redis and closed")
	checkHistory(t, history(t, addr, histKey(fa, "crm")))
}
