package journal_test

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/stretchr/testify/require"
)

func TestQueue(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		j := journaltest.Open(t, cfg)
		now := fc.Now()
		add := func(id string, prio int, age, ttl time.Duration) journal.QueueItem {
			it, err := j.Enqueue(t.Context(), journal.QueueItem{ID: id, Dependency: "crm", Tool: "update", Priority: prio,
				CreatedAt: now.Add(-age), ExpiresAt: now.Add(ttl), ReplayPolicy: "auto", Payload: []byte(`{"x":1}`),
				IdempotencyKey: "k-" + id}, 0)
			require.NoError(t, err)
			return it
		}
		add("low-old", 1, 3*time.Minute, time.Hour)
		add("high-new", 5, time.Minute, time.Hour)
		add("high-old", 5, 2*time.Minute, time.Hour)
		add("soon", 9, 0, time.Minute)
		_, err := j.Enqueue(t.Context(), journal.QueueItem{Dependency: "mail", ExpiresAt: now.Add(time.Hour)}, 1)
		require.NoError(t, err)
		_, err = j.Enqueue(t.Context(), journal.QueueItem{Dependency: "mail", ExpiresAt: now.Add(time.Hour)}, 1)
		require.ErrorIs(t, err, journal.ErrQueueFull)
		require.ErrorContains(t, err, "1 items of mail already wait")

		list, err := j.Queued(t.Context(), "crm", 0, journal.QueueWaiting)
		require.NoError(t, err)
		order := []string{}
		for _, it := range list {
			order = append(order, it.ID)
		}
		require.Equal(t, []string{"soon", "high-old", "high-new", "low-old"}, order, "priority first, then age")
		require.Equal(t, []byte(`{"x":1}`), list[0].Payload)
		require.Equal(t, "auto", list[0].ReplayPolicy)
		n, err := j.CountQueued(t.Context(), "crm")
		require.NoError(t, err)
		require.Equal(t, 4, n)

		fc.Advance(time.Minute)
		expired, err := j.ExpireQueued(t.Context(), "crm", fc.Now())
		require.NoError(t, err)
		require.Len(t, expired, 1)
		require.Equal(t, "soon", expired[0].ID)
		require.Equal(t, journal.QueueExpired, expired[0].State)
		require.Contains(t, expired[0].Reason, "expired at 2026-01-01T00:01:00Z")

		ok, err := j.MoveQueued(t.Context(), "high-old", journal.QueueWaiting, journal.QueueReplaying, "replaying")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = j.MoveQueued(t.Context(), "high-old", journal.QueueWaiting, journal.QueueReplaying, "second replayer")
		require.NoError(t, err)
		require.False(t, ok, "a claim succeeds once")
		top, err := j.Queued(t.Context(), "crm", 1, journal.QueueWaiting)
		require.NoError(t, err)
		require.Equal(t, "high-new", top[0].ID)
		all, err := j.Queued(t.Context(), "", 0)
		require.NoError(t, err)
		require.Len(t, all, 5)
	})
}

func TestEnqueueValidates(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		j := journaltest.Open(t, cfg)
		tests := []struct {
			name    string
			it      journal.QueueItem
			wantErr string
		}{
			{"dependency", journal.QueueItem{ExpiresAt: fc.Now().Add(time.Hour)}, `journal: QueueItem.Dependency = "": is required`},
			{"no expiry", journal.QueueItem{Dependency: "crm"}, "QueueItem.ExpiresAt = zero: is required"},
			{"expired already", journal.QueueItem{Dependency: "crm", ExpiresAt: fc.Now().Add(-time.Second)}, "QueueItem.ExpiresAt = 2025-12-31T23:59:59Z: must be after CreatedAt 2026-01-01T00:00:00Z"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := j.Enqueue(t.Context(), tt.it, 0)
				require.ErrorContains(t, err, tt.wantErr)
			})
		}
	})
}
