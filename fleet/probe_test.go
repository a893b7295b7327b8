package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/probe"
)

// health is the dependency's health endpoint as two replicas' probers see it.
type health struct {
	mu      sync.Mutex
	failing bool
	hang    bool // the next check hangs until its context ends
	checks  []healthCheck
}

type healthCheck struct {
	replica string
	at      time.Time
}

func (h *health) check(replica string) probe.Func {
	return func(ctx context.Context) error {
		h.mu.Lock()
		h.checks = append(h.checks, healthCheck{replica, time.Now()})
		failing, hang := h.failing, h.hang
		h.hang = false
		h.mu.Unlock()
		if hang {
			<-ctx.Done()
			return ctx.Err()
		}
		if failing {
			return errors.New("connection refused")
		}
		return nil
	}
}

func (h *health) set(failing, hang bool) {
	h.mu.Lock()
	h.failing, h.hang = failing, hang
	h.mu.Unlock()
}

func (h *health) all() []healthCheck {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]healthCheck(nil), h.checks...)
}

// probedReplica is one replica: a fleet, its breaker and a prober running on it.
type probedReplica struct {
	f      *fleet.Fleet
	b      *breaker.Breaker
	stop   context.CancelFunc
	exited chan struct{}
}

func startProbedReplica(t *testing.T, addr, app, name string, h *health, cooldown, lease time.Duration) *probedReplica {
	t.Helper()
	f := newFleet(t, addr, app, name, 50*time.Millisecond)
	pol := testPolicy(cooldown)
	pol.ProbeLease = lease
	pol.CooldownMultiplier, pol.MaxCooldown = 2, 20*cooldown // growth a health probe goes without
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: pol})
	require.NoError(t, f.Attach(b))
	p, err := probe.New(probe.Config{Checks: []probe.Check{{Breaker: b, Func: h.check(name), Timeout: lease / 2}},
		MaxInterval: cooldown, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &probedReplica{f: f, b: b, stop: cancel, exited: make(chan struct{})}
	go func() {
		defer close(r.exited)
		_ = p.Run(ctx)
	}()
	t.Cleanup(r.kill)
	return r
}

// kill stops the replica as a crash would: its fleet stops syncing (its probe lease
// is not given back) and its prober stops.
func (r *probedReplica) kill() {
	r.stop()
	_ = r.f.Close()
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		panic("a prober did not stop within 10s")
	}
}

// TestFleetProbesOncePerIntervalAndADeadProberFreesItsLease (issue 24d): two replicas
// with a prober each share one breaker through Redis. While the dependency is down the
// whole fleet sends one health check per interval, not one per replica; one healthy
// check closes both replicas (the other learns at its next sync); a replica that dies
// with its check in flight holds the probe lease until it expires, then the other
// replica probes.
func TestFleetProbesOncePerIntervalAndADeadProberFreesItsLease(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	const (
		cooldown = 300 * time.Millisecond
		lease    = time.Second
	)
	h := &health{failing: true}
	ra := startProbedReplica(t, addr, app, "a", h, cooldown, lease)
	rb := startProbedReplica(t, addr, app, "b", h, cooldown, lease)
	testenv.WaitFor(t, 5*time.Second, "both fleet-wide", func() bool {
		sa, _ := ra.f.Status("crm")
		sb, _ := rb.f.Status("crm")
		return sa.FleetWide && sb.FleetWide
	})
	fail(ra.b, 10)
	testenv.WaitFor(t, 5*time.Second, "b learns of a's trip", func() bool { return rb.b.State() != breaker.Closed })

	// The outage: one health check per cooldown for the fleet.
	start := time.Now()
	testenv.WaitFor(t, 10*time.Second, "six health checks", func() bool { return len(h.all()) >= 6 })
	elapsed := time.Since(start)
	checks := h.all()
	require.LessOrEqual(t, len(checks), int(elapsed/cooldown)+2,
		"%d checks in %s with a %s interval: the replicas each probed", len(checks), elapsed, cooldown)
	for i := 1; i < len(checks); i++ {
		gap := checks[i].at.Sub(checks[i-1].at)
		require.GreaterOrEqual(t, gap, cooldown/2, "checks %d and %d came %s apart: two replicas probed in one interval", i-1, i, gap)
		require.Less(t, gap, 4*cooldown, "checks %d and %d came %s apart: the fleet's open period grew", i-1, i, gap)
	}

	// The recovery: one check closes both.
	h.set(false, false)
	testenv.WaitFor(t, 10*time.Second, "both closed", func() bool {
		return ra.b.State() == breaker.Closed && rb.b.State() == breaker.Closed
	})
	require.LessOrEqual(t, len(h.all())-len(checks), 2, "the closing check, and at most one that raced the sync")

	// A second outage; the replica whose check is in flight dies with it.
	h.set(true, true)
	before := len(h.all())
	fail(ra.b, 10)
	testenv.WaitFor(t, 5*time.Second, "both open", func() bool {
		return ra.b.State() != breaker.Closed && rb.b.State() != breaker.Closed
	})
	testenv.WaitFor(t, 10*time.Second, "a hanging check", func() bool { return len(h.all()) > before })
	hung := h.all()[before]
	victim, survivor := ra, rb
	if hung.replica == "b" {
		victim, survivor = rb, ra
	}
	victim.kill()
	h.set(false, false)
	testenv.WaitFor(t, 10*time.Second, "the survivor probes and closes", func() bool { return survivor.b.State() == breaker.Closed })
	next := h.all()[before+1]
	require.NotEqual(t, hung.replica, next.replica)
	require.GreaterOrEqual(t, next.at.Sub(hung.at), lease-50*time.Millisecond,
		"the survivor probed %s after the dead replica took the lease (lease %s)", next.at.Sub(hung.at), lease)
}
