package admission_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/stretchr/testify/require"
)

func TestAdmit(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(t *testing.T, r *rig)
		work        admission.Work
		wantVerdict admission.Verdict
		wantReason  admission.Reason
		wantMessage string
	}{
		{
			name: "a step that needs no dependency continues", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Tool: "summarize", ReadOnly: true},
			wantVerdict: admission.Admit, wantReason: admission.ReasonNoDependency,
		},
		{
			name: "closed breaker", work: admission.Work{Dependency: "crm", Tool: "update"},
			wantVerdict: admission.Admit, wantReason: admission.ReasonAvailable,
		},
		{
			name: "a dependency without a breaker", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "billing", Tool: "invoice"},
			wantVerdict: admission.Admit, wantReason: admission.ReasonUnguarded,
		},
		{
			name: "read needing the open dependency", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "crm", Tool: "lookup", ReadOnly: true, Priority: admission.PriorityHigh, MaxWait: time.Hour},
			wantVerdict: admission.Reject, wantReason: admission.ReasonReadOnly,
			wantMessage: "Not done: crm is unavailable (next check 00:00 UTC) and reads are not queued. Continue without this data.",
		},
		{
			name: "low priority", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "crm", Tool: "tag", Priority: admission.PriorityLow, MaxWait: time.Hour},
			wantVerdict: admission.Reject, wantReason: admission.ReasonLowPriority,
			wantMessage: "Not done: crm is unavailable (next check 00:00 UTC) and low-priority work is not queued. Continue without it.",
		},
		{
			name: "cannot wait", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityNormal},
			wantVerdict: admission.Reject, wantReason: admission.ReasonCannotWait,
			wantMessage: "Not done: crm is unavailable (next check 00:00 UTC) and this work cannot wait. Continue without it.",
		},
		{
			name: "would expire before the dependency can be tried", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityNormal, MaxWait: 10 * time.Second},
			wantVerdict: admission.Reject, wantReason: admission.ReasonExpiresFirst,
			wantMessage: "Not queued: crm is unavailable (next check 00:00 UTC), later than this work may wait (until 00:00 UTC). Continue without it.",
		},
		{
			name: "may wait: queued", setup: func(t *testing.T, r *rig) { r.trip(t) },
			work:        admission.Work{Dependency: "crm", Tool: "update_customer", Priority: admission.PriorityNormal, MaxWait: 2 * time.Hour},
			wantVerdict: admission.Queue, wantReason: admission.ReasonQueued,
			wantMessage: "Queued until 02:00 UTC, will run when crm recovers; crm is unavailable (next check 00:00 UTC). Do not call update_customer again for this request.",
		},
		{
			name: "forced open: queued, recovery unknown", setup: func(t *testing.T, r *rig) { r.crm.ForceOpen("migration") },
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh, MaxWait: time.Hour},
			wantVerdict: admission.Queue, wantReason: admission.ReasonQueued,
			wantMessage: "Queued until 01:00 UTC, will run when crm recovers; crm is unavailable (taken offline by an operator). Do not call update again for this request.",
		},
		{
			name: "cooldown over: admitted so it can probe",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityLow},
			wantVerdict: admission.Admit, wantReason: admission.ReasonAvailable,
		},
		{
			// Issue 24b: a mutation is never the probe; it waits in the queue instead.
			name: "cooldown over, work that may not probe: queued",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityNormal, MaxWait: time.Hour, NoProbe: true},
			wantVerdict: admission.Queue, wantReason: admission.ReasonQueued,
			wantMessage: "Queued until 01:00 UTC, will run when crm recovers; crm is unavailable. Do not call update again for this request.",
		},
		{
			// Issue 18d: the breaker would refuse it; admitted, it was refused and lost.
			name: "half-open with its only probe out: queued, not admitted",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
				_, err := r.crm.Allow() // the only probe is out
				require.NoError(t, err)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh, MaxWait: time.Hour},
			wantVerdict: admission.Queue, wantReason: admission.ReasonQueued,
			wantMessage: "Queued until 01:00 UTC, will run when crm recovers; crm is unavailable (being checked now). Do not call update again for this request.",
		},
		{
			name: "half-open with its only probe out: a short wait is queued too, recovery may come any moment",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
				_, err := r.crm.Allow() // the only probe is out
				require.NoError(t, err)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh, MaxWait: 5 * time.Second},
			wantVerdict: admission.Queue, wantReason: admission.ReasonQueued,
			wantMessage: "Queued until 00:00 UTC, will run when crm recovers; crm is unavailable (being checked now). Do not call update again for this request.",
		},
		{
			name: "half-open with its only probe out: work that cannot wait is told so",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
				_, err := r.crm.Allow() // the only probe is out
				require.NoError(t, err)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh},
			wantVerdict: admission.Reject, wantReason: admission.ReasonCannotWait,
			wantMessage: "Not done: crm is unavailable (being checked now) and this work cannot wait. Continue without it.",
		},
		{
			name: "half-open, the probe's lease ran out: admitted, it may be the next probe",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.clk.Advance(30 * time.Second)
				_, err := r.crm.Allow() // a probe that never reports
				require.NoError(t, err)
				r.clk.Advance(breaker.DefaultProbeLease)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update"},
			wantVerdict: admission.Admit, wantReason: admission.ReasonAvailable,
		},
		{
			name: "queue full",
			setup: func(t *testing.T, r *rig) {
				r.trip(t)
				r.queue(t, "a", admission.PriorityNormal, time.Hour)
				r.queue(t, "b", admission.PriorityNormal, time.Hour)
			},
			work:        admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh, MaxWait: time.Hour},
			wantVerdict: admission.Reject, wantReason: admission.ReasonQueueFull,
			wantMessage: "Not queued: crm is unavailable (next check 00:00 UTC) and 2 requests already wait for it. Continue without it.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, func(c *admission.Config) { c.MaxQueued = 2 })
			if tt.setup != nil {
				tt.setup(t, r)
			}
			d, err := r.ctrl.Admit(t.Context(), tt.work)
			require.NoError(t, err)
			require.Equal(t, tt.wantVerdict, d.Verdict)
			require.Equal(t, tt.wantReason, d.Reason)
			require.Equal(t, tt.wantMessage, d.Message(nil))
		})
	}
}

func TestQueuedWorkIsDurable(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	d := r.queue(t, "update_customer", admission.PriorityHigh, time.Hour)
	require.Equal(t, r.clk.Now().Add(time.Hour), d.QueuedUntil)
	require.Equal(t, []admission.EventKind{admission.EventQueued}, r.kinds())

	// The process restarts: the item is still there, with everything a replay needs.
	require.NoError(t, r.j.Close())
	j, err := journal.Open(context.Background(), r.jcfg)
	require.NoError(t, err)
	r.j = j
	items, err := j.Queued(t.Context(), "crm", 0, journal.QueueWaiting)
	require.NoError(t, err)
	require.Len(t, items, 1)
	it := items[0]
	require.Equal(t, d.ItemID, it.ID)
	require.Equal(t, "crm", it.Dependency)
	require.Equal(t, int(admission.PriorityHigh), it.Priority)
	require.Equal(t, r.clk.Now(), it.CreatedAt)
	require.Equal(t, d.QueuedUntil, it.ExpiresAt)
	require.Equal(t, string(admission.ReplayAuto), it.ReplayPolicy)
	require.Equal(t, "key-update_customer", it.IdempotencyKey)
	require.Equal(t, `{"tool":"update_customer"}`, string(it.Payload))
}

func TestMessageInALocation(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	d := admission.Decision{Verdict: admission.Queue, Reason: admission.ReasonQueued, Dependency: "crm", Tool: "update",
		QueuedUntil: time.Date(2026, 7, 1, 13, 5, 0, 0, time.UTC), RecoverAt: time.Date(2026, 7, 1, 12, 30, 0, 0, time.UTC)}
	require.Equal(t, "Queued until 15:05 CEST, will run when crm recovers; crm is unavailable (next check 14:30 CEST). Do not call update again for this request.",
		d.Message(paris))
	require.Empty(t, admission.Decision{Verdict: admission.Admit, Reason: admission.ReasonAvailable}.Message(nil))
}

func TestAdmitValidates(t *testing.T) {
	r := newRig(t, nil)
	tests := []struct {
		name    string
		w       admission.Work
		wantErr string
	}{
		{"negative wait", admission.Work{Dependency: "crm", MaxWait: -time.Second}, "admission: Work.MaxWait = -1s: must not be negative"},
		{"unknown policy", admission.Work{Dependency: "crm", ReplayPolicy: "later"}, `Work.ReplayPolicy = "later"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.ctrl.Admit(t.Context(), tt.w)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	noReplay := newRig(t, func(c *admission.Config) { c.Replay = nil })
	noReplay.trip(t)
	_, err := noReplay.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Priority: admission.PriorityHigh, MaxWait: time.Hour})
	require.ErrorContains(t, err, "Config.Replay = nil: is required to queue work with ReplayAuto")
	d, err := noReplay.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Priority: admission.PriorityHigh, MaxWait: time.Hour, ReplayPolicy: admission.ReplayHandOver})
	require.NoError(t, err)
	require.Equal(t, admission.Queue, d.Verdict)
}

func TestNewValidates(t *testing.T) {
	r := newRig(t, nil)
	tests := []struct {
		name    string
		cfg     admission.Config
		wantErr string
	}{
		{"no map", admission.Config{Journal: r.j}, "admission: Map = nil: is required"},
		{"no journal", admission.Config{Map: r.m}, "Journal = nil: is required"},
		{"rate", admission.Config{Map: r.m, Journal: r.j, ReplayRate: 5000}, "ReplayRate = 5000"},
		{"queue size", admission.Config{Map: r.m, Journal: r.j, MaxQueued: -1}, "MaxQueued = -1"},
		{"sweep", admission.Config{Map: r.m, Journal: r.j, SweepEvery: -time.Second}, "SweepEvery = -1s"},
		{"nil hook", admission.Config{Map: r.m, Journal: r.j, OnEvent: []func(admission.Event){nil}}, "OnEvent[0] = nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := admission.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
			require.Panics(t, func() { admission.MustNew(tt.cfg) })
		})
	}
}

func TestQueueLimitHoldsUnderConcurrency(t *testing.T) {
	r := newRig(t, func(c *admission.Config) { c.MaxQueued = 5 })
	r.trip(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	verdicts := map[admission.Reason]int{}
	for i := range 20 {
		wg.Go(func() {
			d, err := r.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Tool: fmt.Sprint("t", i), Priority: admission.PriorityHigh, MaxWait: time.Hour})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			verdicts[d.Reason]++
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, map[admission.Reason]int{admission.ReasonQueued: 5, admission.ReasonQueueFull: 15}, verdicts)
}

// TestHalfOpenAdmitsWhileAProbeSlotIsFree: with two probe slots, half-open with one
// probe out still admits (the work is the second probe); with both out it queues.
func TestHalfOpenAdmitsWhileAProbeSlotIsFree(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	m := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1, HalfOpenProbes: 2}},
	}})
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	ctrl := admission.MustNew(admission.Config{Map: m, Journal: j, Clock: clk, Replay: func(context.Context, journal.QueueItem) error { return nil }})
	crm, _ := m.Get("crm")
	p, err := crm.Allow()
	require.NoError(t, err)
	p.Failure()
	clk.Advance(30 * time.Second)
	work := admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityHigh, MaxWait: time.Hour}
	var verdicts []admission.Verdict
	for range 3 {
		d, err := ctrl.Admit(t.Context(), work)
		require.NoError(t, err)
		verdicts = append(verdicts, d.Verdict)
		if d.Verdict == admission.Admit {
			_, err := crm.Allow() // the admitted work takes its probe slot
			require.NoError(t, err)
		}
	}
	require.Equal(t, []admission.Verdict{admission.Admit, admission.Admit, admission.Queue}, verdicts)
	require.Equal(t, 2, crm.Snapshot().ProbesInFlight)
}
