package admin_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"

	"github.com/stretchr/testify/require"
)

// unknownIntent writes an intent, records an UNKNOWN outcome for it and returns it.
func unknownIntent(t *testing.T, j *journal.Journal, key string, amount int) journal.Intent {
	t.Helper()
	in, err := j.Intend(t.Context(), journal.Dispatch{RequestID: "req-" + key, IdempotencyKey: key, Dependency: "payments",
		Tool: "charge", Args: map[string]any{"amount": amount}, Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, j.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassConnectionReset)))
	return in
}

// TestJournalAdapterOnARealJournal runs the admin endpoint over a real SQLite journal:
// the intents no lookup could settle are listed, approve and discard move them, an
// unknown ID is a 404 and a settled one is refused.
func TestJournalAdapterOnARealJournal(t *testing.T) {
	t.Parallel()
	require.Nil(t, admin.JournalOf(nil))
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	first := unknownIntent(t, j, "key-1", 987654321)
	second := unknownIntent(t, j, "key-2", 7)
	rep, err := j.Reconcile(t.Context()) // no status lookup: both wait for an operator
	require.NoError(t, err)
	require.Len(t, rep.Awaiting, 2)

	f := newFixture(t, func(c *admin.Config) { c.Journal = admin.JournalOf(j) })
	status, _, body := f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.Equal(t, http.StatusOK, status, body)
	var list struct{ Pending []admin.Intent }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Pending, 2)
	got := list.Pending[0]
	require.Equal(t, first.ID, got.ID)
	require.Equal(t, "payments", got.Dependency)
	require.Equal(t, "charge", got.Tool)
	require.Equal(t, "req-key-1", got.RequestID)
	require.Equal(t, 1, got.Attempt)
	require.True(t, first.CreatedAt.Equal(got.CreatedAt))
	require.Equal(t, `charge on payments, attempt 1, outcome UNKNOWN (connection_reset), arguments `+first.ArgsHash[:12]+
		`…; no status lookup for dependency "payments"`, got.Summary)
	require.NotContains(t, body, "987654321", "arguments are never shown")

	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/" + first.ID + "/approve", body: `{"reason":"ledger shows no charge"}`})
	require.Equal(t, http.StatusOK, status, body)
	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/" + second.ID + "/discard"})
	require.Equal(t, http.StatusOK, status, body)
	for id, want := range map[string]journal.State{first.ID: journal.StateApproved, second.ID: journal.StateDiscarded} {
		in, err := j.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want, in.State)
	}
	_, _, body = f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.JSONEq(t, `{"pending": []}`, body)

	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/in_nope/approve"})
	require.Equal(t, http.StatusNotFound, status, body)
	status, _, body = f.do(t, request{method: http.MethodPost, path: "/api/journal/" + first.ID + "/discard"})
	require.Equal(t, http.StatusBadGateway, status)
	require.Contains(t, body, "approved", "a settled intent is refused, saying why")
}

// TestJournalAdapterShowsCorruptRows: one tampered row neither hides the healthy
// intents from the operator nor disappears: it is listed by ID and problem, without
// any of its contents.
func TestJournalAdapterShowsCorruptRows(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: path}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	healthy := unknownIntent(t, j, "key-1", 1)
	tampered := unknownIntent(t, j, "key-2", 2)
	_, err = j.Reconcile(t.Context())
	require.NoError(t, err)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE "+journal.DefaultPrefix+"intents SET idempotency_key = 'key-forged' WHERE id = $1", tampered.ID)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	f := newFixture(t, func(c *admin.Config) { c.Journal = admin.JournalOf(j) })
	status, _, body := f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.Equal(t, http.StatusOK, status, body)
	var list struct{ Pending []admin.Intent }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Pending, 2, body)
	require.Equal(t, healthy.ID, list.Pending[0].ID)
	require.Equal(t, tampered.ID, list.Pending[1].ID)
	require.Contains(t, list.Pending[1].Summary, "corrupt row, not shown: ")
	require.Contains(t, list.Pending[1].Summary, "does not match its checksum")
	require.NotContains(t, body, "key-forged")
}
