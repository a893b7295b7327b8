package journal_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
)

// Config.ReconcileOnOpen: the restarted process settles what a crash left open in
// Open itself, with one log record of what it did; j.Reconcile at start-up was a call
// a newcomer forgot (issue 48, item 1). Without it, Open settles nothing.
func TestReconcileOnOpenSettlesWhatACrashLeft(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		before := journaltest.Open(t, cfg)
		for _, key := range []string{"applied", "cannot-tell"} {
			d := journaltest.Dispatch(0)
			d.IdempotencyKey, d.Dependency = key, "crm"
			_, err := before.Intend(t.Context(), d) // the process dies before the outcome
			require.NoError(t, err)
		}
		require.NoError(t, before.Close())
		fc.Advance(3 * time.Minute) // past PostgreSQL's InFlightGrace

		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(_ context.Context, in journal.Intent) (journal.Status, error) {
			if in.IdempotencyKey == "applied" {
				return journal.StatusApplied, nil
			}
			return journal.StatusUnknown, nil
		}}
		plain := journaltest.Open(t, cfg)
		n, _, err := plain.Backlog(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, n, "without ReconcileOnOpen, Open settles nothing")
		require.NoError(t, plain.Close())

		var logs bytes.Buffer
		cfg.ReconcileOnOpen = true
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		after := journaltest.Open(t, cfg)
		pending, err := after.Pending(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"cannot-tell"}, ids(pending), "the applied intent was settled in Open")
		require.Contains(t, logs.String(), `msg="journal: reconciled at open" applied=1 not_applied=0 awaiting=1 skipped=0 corrupt=0`)
	})
}
