package telemetry_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/telemetry"

	"github.com/stretchr/testify/require"
)

// pendingSeen is an observe.Journal that hands each reading to the test.
type pendingSeen chan [2]any

func (p pendingSeen) JournalPending(n int, oldest time.Time) { p <- [2]any{n, oldest} }

// TestWatchJournalFeedsTheGauges reads a real SQLite journal's backlog into the
// journal gauges, at start and at each tick, and stops when the journal closes.
func TestWatchJournalFeedsTheGauges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	jc := clock.NewFake(start.Add(-10 * time.Minute))
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}, Clock: jc})
	require.NoError(t, err)

	// One reading straight into the Telemetry: nothing waits yet.
	require.NoError(t, telemetry.PollJournal(t.Context(), j, f.tel))
	f.compare(t, `
# HELP agentbreaker_journal_pending_intents Journal intents whose outcome is unknown and that await reconciliation.
# TYPE agentbreaker_journal_pending_intents gauge
agentbreaker_journal_pending_intents 0
`, "agentbreaker_journal_pending_intents")

	seen := make(pendingSeen)
	tick := make(chan time.Time)
	done := make(chan error, 1)
	go func() {
		done <- telemetry.WatchJournal(context.Background(), telemetry.JournalWatch{Journal: j, Observer: seen, Tick: tick})
	}()
	require.Equal(t, [2]any{0, time.Time{}}, testwait.Recv(t, seen, "the reading at start"), "a reading at start")

	in, err := j.Intend(t.Context(), journal.Dispatch{RequestID: "r1", IdempotencyKey: "k1", Dependency: "payments", Tool: "charge", Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, j.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassTimeout)))
	tick <- start
	got := testwait.Recv(t, seen, "the reading after a tick")
	require.Equal(t, 1, got[0])
	require.True(t, in.CreatedAt.Equal(got[1].(time.Time)))

	// The same reading, given to the Telemetry, is exported with its age.
	f.tel.JournalPending(got[0].(int), got[1].(time.Time))
	f.compare(t, `
# HELP agentbreaker_journal_pending_intents Journal intents whose outcome is unknown and that await reconciliation.
# TYPE agentbreaker_journal_pending_intents gauge
agentbreaker_journal_pending_intents 1
# HELP agentbreaker_journal_oldest_pending_age_seconds Age of the oldest journal intent awaiting reconciliation; 0 when none waits.
# TYPE agentbreaker_journal_oldest_pending_age_seconds gauge
agentbreaker_journal_oldest_pending_age_seconds 600
`, "agentbreaker_journal_pending_intents", "agentbreaker_journal_oldest_pending_age_seconds")

	require.NoError(t, j.Close())
	tick <- start
	require.ErrorIs(t, <-done, journal.ErrClosed, "a closed journal ends the watch")
}

func TestWatchJournalStopsWithItsContextAndChecksConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	seen := make(pendingSeen, 1)
	done := make(chan error, 1)
	go func() {
		done <- telemetry.WatchJournal(ctx, telemetry.JournalWatch{Journal: j, Observer: seen, Every: time.Hour})
	}()
	testwait.Recv(t, seen, "the first reading")
	cancel()
	require.NoError(t, testwait.Recv(t, done, "WatchJournal to return once cancelled"))

	tests := []struct {
		name    string
		w       telemetry.JournalWatch
		wantErr string
	}{
		{name: "no journal", w: telemetry.JournalWatch{Observer: f.tel}, wantErr: "JournalWatch.Journal = nil"},
		{name: "no observer", w: telemetry.JournalWatch{Journal: j}, wantErr: "JournalWatch.Observer = nil"},
		{name: "too often", w: telemetry.JournalWatch{Journal: j, Observer: f.tel, Every: time.Millisecond}, wantErr: "JournalWatch.Every = 1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := telemetry.WatchJournal(t.Context(), tt.w)
			require.ErrorContains(t, err, tt.wantErr)
			require.False(t, errors.Is(err, context.Canceled))
		})
	}
}
