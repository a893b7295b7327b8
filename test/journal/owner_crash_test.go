package journal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestReconcileSettlesAKilledProcessAtOnce is issue 14f: a process sharing a
// PostgreSQL journal is killed with SIGKILL while writing; the start-up Reconcile of
// the next process, on a clock that has not moved past the two-minute grace, settles
// every intent the dead process left open, skips none, and the backlog showed them
// before it ran.
func TestReconcileSettlesAKilledProcessAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	cfg, spec := crashTarget(t, journaltest.Postgres)
	lines, _ := crashOnce(t, spec+"|0", 40)
	acked, finished := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		switch f[0] {
		case "I":
			acked[f[1]] = true
		case "F":
			finished[f[1]] = true
		}
	}
	require.GreaterOrEqual(t, len(acked), 39)

	fc := fakeClock()
	cfg.Clock = fc
	j := journaltest.Open(t, cfg)
	ctx := t.Context()
	open0, err := j.Intents(ctx, journal.Filter{States: []journal.State{journal.StateOpen}})
	require.NoError(t, err)
	require.NotEmpty(t, open0)
	dead := open0[0].Owner
	stillOpen := 0
	for id := range acked {
		if !finished[id] {
			in, err := j.Get(ctx, id)
			require.NoError(t, err)
			// Open, unless the child's Finish committed just before the kill and it died
			// before saying so: then it holds the outcome Finish wrote, never a lost one.
			if in.State != journal.StateOpen {
				require.True(t, in.State == journal.StateUnknown || in.State == journal.StateSucceeded ||
					in.State == journal.StateFailed || in.State == journal.StateFailedBeforeSend, "intent %s: %s", id, in.State)
				continue
			}
			stillOpen++
		}
	}
	require.Positive(t, stillOpen, "the kill left intents open")
	unknowns, err := j.Intents(ctx, journal.Filter{States: []journal.State{journal.StateUnknown}})
	require.NoError(t, err)
	n, _, err := j.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, len(open0)+len(unknowns), n, "the dead process's open intents are in the backlog")

	waitForLeaseRelease(t, prefixOf(cfg), dead)
	rep, err := j.Reconcile(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Skipped, "a dead process's intents are not skipped")
	settled := map[string]bool{}
	for _, in := range rep.Awaiting {
		settled[in.ID] = true
	}
	for _, in := range open0 {
		require.True(t, settled[in.ID], "open intent %s of the killed process settled at start-up", in.ID)
	}
	require.Len(t, rep.Awaiting, len(open0)+len(unknowns), "no lookup: all wait for an operator")
}

// waitForLeaseRelease blocks, on the server, until the owner's lease is free: the
// server ends a killed client's session when it reads the closed socket, which can
// trail the child's exit by a moment. The lock is taken and given back at once.
func waitForLeaseRelease(t *testing.T, prefix, owner string) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), testenv.PostgresDSN(t))
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Exec(context.Background(), "SET lock_timeout = '30s'")
	require.NoError(t, err)
	_, err = c.Exec(context.Background(), "SELECT pg_advisory_lock($1)", postgres.LeaseKey(prefix, owner))
	require.NoError(t, err, "the killed process's lease was never released")
	_, err = c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", postgres.LeaseKey(prefix, owner))
	require.NoError(t, err)
}
