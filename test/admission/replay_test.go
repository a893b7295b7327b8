package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/stretchr/testify/require"
)

// waitFor returns the next event of kind, failing if Run reports none (it will have
// returned, so the channel stays empty and the test times out loudly instead).
func (r *rig) waitFor(t *testing.T, kind admission.EventKind) admission.Event {
	t.Helper()
	for e := range r.notify {
		if e.Kind == kind {
			return e
		}
	}
	t.Fatal("no more events")
	return admission.Event{}
}

func TestQueuedWorkReplaysInPriorityOrderWhenTheBreakerCloses(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	low := r.queue(t, "low", admission.PriorityNormal, time.Hour)
	r.clk.Advance(time.Second)
	high := r.queue(t, "high", admission.PriorityHigh, time.Hour)
	r.clk.Advance(time.Second)
	high2 := r.queue(t, "high2", admission.PriorityHigh, time.Hour)
	r.clk.Advance(time.Second)
	mid := r.queue(t, "mid", admission.PriorityNormal+5, time.Hour)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.ctrl.Run(ctx) }()

	// The dependency recovers: cooldown over, a probe succeeds, the breaker closes.
	r.clk.Advance(30 * time.Second)
	p, err := r.crm.Allow()
	require.NoError(t, err)
	require.True(t, p.IsProbe())
	p.Success()
	require.Equal(t, breaker.Closed, r.crm.State())

	for range 4 {
		r.waitFor(t, admission.EventReplayed)
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	require.Equal(t, []string{high.ItemID, high2.ItemID, mid.ItemID, low.ItemID}, r.replays(), "higher priority first, older first")
	require.Equal(t, []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}, r.sleeper.Slept(),
		"two per second: the recovered dependency is not flooded")
	left, err := r.j.Queued(t.Context(), "crm", 0, journal.QueueWaiting)
	require.NoError(t, err)
	require.Empty(t, left)
	done4, err := r.j.Queued(t.Context(), "crm", 0, journal.QueueReplayed)
	require.NoError(t, err)
	require.Len(t, done4, 4)
}

func TestExpiredItemsAreDroppedAndReported(t *testing.T) {
	tick := make(chan time.Time)
	r := newRig(t, func(c *admission.Config) {
		c.NewTicker = func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} }
	})
	r.trip(t)
	short := r.queue(t, "short", admission.PriorityHigh, time.Minute)
	long := r.queue(t, "long", admission.PriorityNormal, time.Hour)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.ctrl.Run(ctx) }()
	r.clk.Advance(2 * time.Minute)
	tick <- r.clk.Now()
	e := r.waitFor(t, admission.EventExpired)
	require.Equal(t, short.ItemID, e.Item.ID)
	require.Equal(t, "expired at 2026-01-01T00:02:00Z before its dependency recovered", e.Reason)
	require.Equal(t, journal.QueueExpired, e.Item.State)

	// Recovery later replays only what had not expired.
	r.crm.Reset("fixed")
	r.waitFor(t, admission.EventReplayed)
	cancel()
	<-done
	require.Equal(t, []string{long.ItemID}, r.replays())
	require.Equal(t, []admission.EventKind{admission.EventQueued, admission.EventQueued, admission.EventExpired, admission.EventReplayed}, r.kinds())
}

func TestDrainDropsExpiredItemsFirst(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	r.queue(t, "short", admission.PriorityHigh, time.Minute)
	r.crm.Reset("fixed")
	r.clk.Advance(2 * time.Minute)
	rep, err := r.ctrl.Drain(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{Expired: 1}, rep)
	require.Empty(t, r.replays())
}

func TestDrainStopsWhenTheBreakerOpensAgain(t *testing.T) {
	var r *rig
	r = newRig(t, func(c *admission.Config) {
		c.Replay = func(context.Context, journal.QueueItem) error {
			r.crm.ForceOpen("relapse") // the dependency fails again during the drain
			return errors.New("503")
		}
	})
	r.trip(t)
	first := r.queue(t, "a", admission.PriorityHigh, time.Hour)
	r.queue(t, "b", admission.PriorityNormal, time.Hour)
	r.crm.Reset("fixed")
	rep, err := r.ctrl.Drain(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{Failed: 1, Stopped: "breaker is forced_open"}, rep)
	failed, err := r.j.Queued(t.Context(), "crm", 0, journal.QueueFailed)
	require.NoError(t, err)
	require.Len(t, failed, 1)
	require.Equal(t, first.ItemID, failed[0].ID)
	require.Equal(t, "replay failed: "+redact.Summary("503"), failed[0].Reason)
	n, err := r.j.CountQueued(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, 1, n, "the rest waits for the next recovery")
	require.Equal(t, admission.EventReplayFailed, r.kinds()[2])
}

func TestHandOver(t *testing.T) {
	var handed []string
	r := newRig(t, func(c *admission.Config) {
		c.OnHandOver = func(it journal.QueueItem) { handed = append(handed, it.Tool) }
	})
	r.trip(t)
	d, err := r.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Tool: "delete_account", Priority: admission.PriorityHigh,
		MaxWait: time.Hour, ReplayPolicy: admission.ReplayHandOver})
	require.NoError(t, err)
	require.Equal(t, admission.Queue, d.Verdict)
	r.crm.Reset("fixed")
	rep, err := r.ctrl.Drain(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{HandedOver: 1}, rep)
	require.Equal(t, []string{"delete_account"}, handed)
	require.Empty(t, r.replays(), "not replayed automatically")
}

func TestTwoReplayersNeverRunAnItemTwice(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	for _, tool := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		r.queue(t, tool, admission.PriorityHigh, time.Hour)
	}
	r.crm.Reset("fixed")
	var mu sync.Mutex
	ran := map[string]int{}
	replay := func(_ context.Context, it journal.QueueItem) error {
		mu.Lock()
		ran[it.ID]++
		mu.Unlock()
		return nil
	}
	mk := func() *admission.Controller {
		return admission.MustNew(admission.Config{Map: r.m, Journal: r.j, Clock: r.clk, Sleeper: r.sleeper, Replay: replay})
	}
	a, b := mk(), mk()
	var wg sync.WaitGroup
	for _, c := range []*admission.Controller{a, b} {
		wg.Go(func() {
			if _, err := c.Drain(t.Context(), "crm"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Len(t, ran, 8)
	for id, n := range ran {
		require.Equal(t, 1, n, "item %s", id)
	}
}

func TestRecoverInterrupted(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	d := r.queue(t, "a", admission.PriorityHigh, time.Hour)
	ok, err := r.j.MoveQueued(t.Context(), d.ItemID, journal.QueueWaiting, journal.QueueReplaying, "replay started")
	require.NoError(t, err)
	require.True(t, ok) // a replayer took it, then the process died

	got, err := r.ctrl.RecoverInterrupted(t.Context(), 5*time.Minute)
	require.NoError(t, err)
	require.Empty(t, got, "it may still be running elsewhere")
	r.clk.Advance(10 * time.Minute)
	got, err = r.ctrl.RecoverInterrupted(t.Context(), 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, journal.QueueInterrupted, got[0].State)
	require.Equal(t, admission.EventInterrupted, r.kinds()[1])
}
