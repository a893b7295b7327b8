package journal_test

import (
	"context"
	"testing"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"

	"github.com/stretchr/testify/require"
)

// TestOneCorruptRowDoesNotStopReconcile is issue 14e: with one tampered row and one
// whose state is garbage among healthy intents, Reconcile settles every healthy one
// and reports each bad row by id and problem; Pending returns the healthy intents with
// a *CorruptError naming the bad ones.
func TestOneCorruptRowDoesNotStopReconcile(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		cfg.Lookups = map[string]journal.StatusLookup{"crm": func(_ context.Context, in journal.Intent) (journal.Status, error) {
			if in.IdempotencyKey == "key-1" {
				return journal.StatusApplied, nil
			}
			return journal.StatusUnknown, nil
		}}
		j := journaltest.Open(t, cfg)
		var all []journal.Intent
		for i := range 6 {
			in, err := j.Intend(t.Context(), journaltest.Dispatch(i))
			require.NoError(t, err)
			require.NoError(t, j.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassTimeout)))
			all = append(all, in)
		}
		p := prefixOf(cfg)
		raw(t, cfg, "UPDATE "+p+"intents SET idempotency_key = 'key-forged' WHERE id = $1", all[2].ID)
		raw(t, cfg, "UPDATE "+p+"intents SET checksum = 'forged' WHERE id = $1", all[4].ID)

		rep, err := j.Reconcile(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"key-1"}, ids(rep.Applied))
		require.Equal(t, []string{"key-0", "key-3", "key-5"}, ids(rep.Awaiting), "every healthy intent is settled")
		require.Equal(t, []journal.BadRecord{
			{ID: all[2].ID, Problem: "journal: record does not match its checksum: intent " + all[2].ID + ": a field fixed at creation was changed"},
			{ID: all[4].ID, Problem: "journal: record does not match its checksum: intent " + all[4].ID + ": a field fixed at creation was changed"},
		}, rep.Corrupt)

		// An intent awaiting an operator is tampered with: the admin list still shows the others.
		raw(t, cfg, "UPDATE "+p+"intents SET tool = 'refund' WHERE id = $1", all[3].ID)
		pending, err := j.Pending(t.Context())
		var ce *journal.CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, []journal.BadRecord{{ID: all[3].ID, Problem: "journal: record does not match its checksum: intent " + all[3].ID + ": a field fixed at creation was changed"}}, ce.Records)
		require.ErrorContains(t, err, "journal: 1 intents row(s) failed their checks: "+all[3].ID)
		require.Equal(t, []string{"key-0", "key-5"}, ids(pending))

		// A state no build writes is caught too, when the row is read.
		raw(t, cfg, "UPDATE "+p+"intents SET state = 'exploded' WHERE id = $1", all[5].ID)
		_, err = j.Get(t.Context(), all[5].ID)
		require.ErrorContains(t, err, `unknown state "exploded"`)
	})
}
