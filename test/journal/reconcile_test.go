package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/stretchr/testify/require"
)

func ids(list []journal.Intent) []string {
	out := []string{}
	for _, in := range list {
		out = append(out, in.IdempotencyKey)
	}
	return out
}

func TestReconcileAfterRestart(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		before := journaltest.Open(t, cfg)
		write := func(key, dep string, c *classify.Classification) journal.Intent {
			d := journaltest.Dispatch(0)
			d.IdempotencyKey, d.Dependency = key, dep
			in, err := before.Intend(t.Context(), d)
			require.NoError(t, err)
			if c != nil {
				require.NoError(t, before.Finish(t.Context(), in.ID, *c))
			}
			return in
		}
		unknown := classify.ForClass(classify.ClassTimeout)
		ok := classify.ForClass(classify.ClassNone)
		write("applied", "crm", nil) // the process died before the outcome was recorded
		write("not-applied", "crm", &unknown)
		write("cannot-tell", "crm", nil)
		write("lookup-fails", "crm", &unknown)
		write("no-lookup", "mail", &unknown)
		write("done", "crm", &ok)
		require.NoError(t, before.Close())
		// The restart comes later than InFlightGrace (2m for PostgreSQL by default, where
		// another live process could own an open intent).
		fc.Advance(3 * time.Minute)

		var asked []string
		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(_ context.Context, in journal.Intent) (journal.Status, error) {
			asked = append(asked, in.IdempotencyKey)
			switch in.IdempotencyKey {
			case "applied":
				return journal.StatusApplied, nil
			case "not-applied":
				return journal.StatusNotApplied, nil
			case "lookup-fails":
				return journal.StatusApplied, errors.New("status endpoint returned 502")
			}
			return journal.StatusUnknown, nil
		}}
		after := journaltest.Open(t, cfg)
		rep, err := after.Reconcile(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"applied"}, ids(rep.Applied))
		require.Equal(t, []string{"not-applied"}, ids(rep.NotApplied))
		require.ElementsMatch(t, []string{"cannot-tell", "lookup-fails", "no-lookup"}, ids(rep.Awaiting))
		require.Empty(t, rep.Skipped)
		require.NotContains(t, asked, "done", "settled intents are left alone")

		pending, err := after.Pending(t.Context())
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"cannot-tell", "lookup-fails", "no-lookup"}, ids(pending))
		n, oldest, err := after.Backlog(t.Context())
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Equal(t, pending[0].CreatedAt, oldest)
		notes := map[string]string{}
		for _, in := range pending {
			notes[in.IdempotencyKey] = in.Note
		}
		require.Equal(t, `no status lookup for dependency "mail"`, notes["no-lookup"])
		// The service's words are kept as a fingerprint only: they may quote anything.
		require.Equal(t, "status lookup failed: "+redact.Summary("status endpoint returned 502"), notes["lookup-fails"])

		// The operator decides.
		byKey := map[string]journal.Intent{}
		for _, in := range pending {
			byKey[in.IdempotencyKey] = in
		}
		require.NoError(t, after.Approve(t.Context(), byKey["cannot-tell"].ID))
		require.NoError(t, after.Discard(t.Context(), byKey["no-lookup"].ID))
		var se *journal.StateError
		require.ErrorAs(t, after.Approve(t.Context(), byKey["cannot-tell"].ID), &se)
		require.Equal(t, "approved", se.State)
		require.ErrorIs(t, after.Discard(t.Context(), "in_nope"), journal.ErrNotFound)

		pending, err = after.Pending(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"lookup-fails"}, ids(pending))
		n, _, err = after.Backlog(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// A second pass asks again about what still waits; nothing else changes.
		asked = nil
		_, err = after.Reconcile(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"lookup-fails"}, asked)
		got, err := after.Get(t.Context(), byKey["cannot-tell"].ID)
		require.NoError(t, err)
		require.Equal(t, journal.StateApproved, got.State)
		require.Equal(t, "approved by operator", got.Note)
	})
}

func TestReconcileLeavesCallsInFlightAlone(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		cfg.InFlightGrace = 2 * time.Minute // used only where the backend cannot tell (SQLite)
		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(context.Context, journal.Intent) (journal.Status, error) {
			return journal.StatusNotApplied, nil
		}}
		mine, err := journal.Open(t.Context(), cfg)
		require.NoError(t, err)
		defer mine.Close()
		other := journaltest.Open(t, cfg) // another process sharing the database
		in, err := mine.Intend(t.Context(), journaltest.Dispatch(1))
		require.NoError(t, err)
		n, oldest, err := other.Backlog(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n, "an open intent is backlog, in flight or not")
		require.Equal(t, in.CreatedAt, oldest)

		rep, err := mine.Reconcile(t.Context())
		require.NoError(t, err)
		require.Len(t, rep.Skipped, 1)
		require.Equal(t, in.ID, rep.Skipped[0].Intent.ID)
		require.Equal(t, "its call is still in flight in this process", rep.Skipped[0].Why)
		rep, err = other.Reconcile(t.Context())
		require.NoError(t, err)
		require.Len(t, rep.Skipped, 1)
		if b.Name == "postgres" {
			require.Equal(t, "its process is alive (owner "+mine.Owner()+" holds its lease)", rep.Skipped[0].Why)
			// However long it takes: a live process's call is never settled under it.
			fc.Advance(time.Hour)
			rep, err = other.Reconcile(t.Context())
			require.NoError(t, err)
			require.Len(t, rep.Skipped, 1)
			require.NoError(t, mine.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassTimeout)))
			return
		}
		require.Contains(t, rep.Skipped[0].Why, "which this backend cannot check (InFlightGrace 2m0s)")
		fc.Advance(2 * time.Minute)
		rep, err = other.Reconcile(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"key-1"}, ids(rep.NotApplied))

		var se *journal.StateError
		require.ErrorAs(t, mine.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassNone)), &se,
			"a late outcome does not overwrite a settlement")
	})
}

func TestReconcileIntent(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(context.Context, journal.Intent) (journal.Status, error) {
			return journal.StatusApplied, nil
		}}
		j := journaltest.Open(t, cfg)
		in, err := j.Intend(t.Context(), journaltest.Dispatch(1))
		require.NoError(t, err)
		require.NoError(t, j.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassConnectionReset)))
		got, err := j.ReconcileIntent(t.Context(), in.ID)
		require.NoError(t, err)
		require.Equal(t, journal.StateApplied, got.State)
		again, err := j.ReconcileIntent(t.Context(), in.ID)
		require.NoError(t, err)
		require.Equal(t, got, again, "a settled intent is returned as it is")
	})
}
