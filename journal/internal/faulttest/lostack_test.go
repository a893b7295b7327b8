package faulttest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/internal/store"

	"github.com/stretchr/testify/require"
)

// lostAckBackend wraps a real backend so that the next commits (as many as lose says)
// go through on the database and then report an error, as when the connection drops
// after the server committed and before its answer arrived.
type lostAckBackend struct {
	journal.Backend
	lose *atomic.Int32
}

func (b lostAckBackend) Open(ctx context.Context, prefix string) (store.Store, error) {
	s, err := b.Backend.Open(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return lostAckStore{Store: s, lose: b.lose}, nil
}

type lostAckStore struct {
	store.Store
	lose *atomic.Int32
}

var errLostAck = errors.New("read tcp: connection reset by peer")

func (s lostAckStore) Tx(ctx context.Context, f func(q store.Querier) error) error {
	err := s.Store.Tx(ctx, f)
	if err == nil && s.lose.Add(-1) >= 0 {
		return errLostAck
	}
	return err
}

// TestLostAcknowledgementIsNotWrittenTwice is issue 14g: a commit that went through but
// whose acknowledgement was lost is recognised by its commit marker; no write is
// retried into a duplicate-key error, and Finish does not report a misleading state
// error for the outcome it did record.
func TestLostAcknowledgementIsNotWrittenTwice(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		lose := &atomic.Int32{}
		cfg.Backend = lostAckBackend{Backend: cfg.Backend, lose: lose}
		j := journaltest.Open(t, cfg)
		ctx := t.Context()

		lose.Store(1)
		in, err := j.Intend(ctx, journaltest.Dispatch(1))
		require.NoError(t, err, "the intent was committed: it is acknowledged")
		lose.Store(1)
		require.NoError(t, j.Finish(ctx, in.ID, classify.ForClass(classify.ClassNone)))
		got, err := j.Get(ctx, in.ID)
		require.NoError(t, err)
		require.Equal(t, journal.StateSucceeded, got.State)

		lose.Store(1)
		it, err := j.Enqueue(ctx, journal.QueueItem{Dependency: "crm", ExpiresAt: time.Now().Add(time.Hour)}, 1)
		require.NoError(t, err)
		lose.Store(1)
		moved, err := j.MoveQueued(ctx, it.ID, journal.QueueWaiting, journal.QueueReplaying, "replay started")
		require.NoError(t, err)
		require.True(t, moved, "the claim went through once and is reported as taken")

		// A batch of concurrent writers whose shared commit loses its acknowledgement.
		lose.Store(1)
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			wg.Go(func() {
				_, err := j.Intend(ctx, journaltest.Dispatch(100+i))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		all, err := j.Intents(ctx, journal.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 33, "every intent once")
		items, err := j.Queued(ctx, "crm", 0)
		require.NoError(t, err)
		require.Len(t, items, 1)
		st := j.Stats()
		require.Equal(t, int64(5), st.LostAcks)
	})
}
