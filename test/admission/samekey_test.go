package admission_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/journal"
)

// Regression (issue 24b): a mutation is never the probe, so a model that asks again
// for a queued call after the cooldown is queued again; with the same idempotency key
// that made a second item, and the operation was replayed twice. The same key while
// an item waits is that item.
func TestTheSameOperationAskedAgainIsQueuedOnce(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	w := admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityNormal, MaxWait: time.Hour,
		IdempotencyKey: "K", NoProbe: true}
	first, err := r.ctrl.Admit(t.Context(), w)
	require.NoError(t, err)
	require.Equal(t, admission.Queue, first.Verdict)
	r.clk.Advance(30 * time.Second) // the cooldown is over; the work may not probe
	again, err := r.ctrl.Admit(t.Context(), w)
	require.NoError(t, err)
	require.Equal(t, admission.Queue, again.Verdict)
	require.Equal(t, first.ItemID, again.ItemID, "the item already waiting")
	items, err := r.j.Queued(t.Context(), "crm", 0, journal.QueueWaiting)
	require.NoError(t, err)
	require.Len(t, items, 1)

	w.IdempotencyKey = "L" // another operation is another item
	other, err := r.ctrl.Admit(t.Context(), w)
	require.NoError(t, err)
	require.NotEqual(t, first.ItemID, other.ItemID)
}

// With a health probe attached, no work probes: once the cooldown is over work that
// may wait is queued, not admitted (issue 24a).
func TestWorkOnAProbedBreakerIsQueuedAfterTheCooldown(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	r.clk.Advance(30 * time.Second)
	w := admission.Work{Dependency: "crm", Tool: "update", Priority: admission.PriorityNormal, MaxWait: time.Hour}
	d, err := r.ctrl.Admit(t.Context(), w)
	require.NoError(t, err)
	require.Equal(t, admission.Admit, d.Verdict, "no probe: this work may be the probe")
	require.NoError(t, r.crm.AttachProber(30*time.Second))
	d, err = r.ctrl.Admit(t.Context(), w)
	require.NoError(t, err)
	require.Equal(t, admission.Queue, d.Verdict, "the health probe decides; the work waits")
}
