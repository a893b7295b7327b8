// Package journaltest is what the journal's tests on real databases share: the two
// backends, each giving a fresh, empty journal per test, a runner of one test body per
// backend, and a status lookup that asks a test server whether a call was applied. The
// journal's conformance tests (test/journal) and its fault-injection tests
// (journal/internal/faulttest) use it; no library code imports it.
package journaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
)

// Key is the journal secret of the PostgreSQL journals (SQLite ones use the key file
// beside the database, as by default).
var Key = []byte("0123456789abcdef-journal-tests")

// Backend is one place a journal can live.
type Backend struct {
	Name string
	// Config returns a Config for a fresh, empty journal of this backend: a file in the
	// test's temporary directory, or tables under a prefix of the test's own that are
	// dropped when it ends.
	Config func(t testing.TB) journal.Config
}

// SQLite and Postgres are the two backends; Postgres reads its address from the
// environment (see testenv.PostgresDSN).
var (
	SQLite = Backend{Name: "sqlite", Config: func(t testing.TB) journal.Config {
		return journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "journal.db")}}
	}}
	Postgres = Backend{Name: "postgres", Config: func(t testing.TB) journal.Config {
		dsn := testenv.PostgresDSN(t)
		return journal.Config{Backend: postgres.Backend{DSN: dsn}, Prefix: testenv.PostgresJournalPrefix(t), HashKey: Key}
	}}
)

// Backends lists both.
var Backends = []Backend{SQLite, Postgres}

// Open opens a journal and closes it when the test ends.
func Open(t testing.TB, cfg journal.Config) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

// ForEachBackend runs body once per backend, in parallel subtests named after them.
func ForEachBackend(t *testing.T, body func(t *testing.T, b Backend)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			body(t, b)
		})
	}
}

// Dispatch is the i-th of a series of distinct dispatches of one mutation ("req-i",
// "key-i", arguments with a non-ASCII name).
func Dispatch(i int) journal.Dispatch {
	return journal.Dispatch{
		RequestID: fmt.Sprintf("req-%d", i), IdempotencyKey: fmt.Sprintf("key-%d", i), Dependency: "crm",
		Tool: "update_customer", Args: map[string]any{"id": i, "name": "Zoë"}, Attempt: 1, PolicyVersion: "v7",
	}
}

// StatusLookup asks a test server whether the call behind an intent was applied:
// GET base/status?key=<idempotency key>, answered with {"Applied": true|false}.
func StatusLookup(client *http.Client, base string) journal.StatusLookup {
	return func(ctx context.Context, in journal.Intent) (journal.Status, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status?key="+url.QueryEscape(in.IdempotencyKey), nil)
		if err != nil {
			return journal.StatusUnknown, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return journal.StatusUnknown, err
		}
		defer resp.Body.Close()
		var body struct{ Applied bool }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return journal.StatusUnknown, err
		}
		if body.Applied {
			return journal.StatusApplied, nil
		}
		return journal.StatusNotApplied, nil
	}
}
