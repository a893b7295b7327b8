package faulttest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// The helpers below are the part of the journal conformance tests' helpers
// (test/journal/backends_test.go) that the tests here use.

// backend is one place a journal can live.
type backend struct {
	name string
	// config returns a Config for a fresh, empty journal of this backend.
	config func(t testing.TB) journal.Config
}

var backends = []backend{
	{
		name: "sqlite",
		config: func(t testing.TB) journal.Config {
			return journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "journal.db")}}
		},
	},
	{
		name: "postgres",
		config: func(t testing.TB) journal.Config {
			dsn := testenv.PostgresDSN(t)
			prefix := testenv.PostgresJournalPrefix(t)
			return journal.Config{Backend: postgres.Backend{DSN: dsn}, Prefix: prefix, HashKey: []byte("0123456789abcdef-journal-tests")}
		},
	},
}

// open opens a journal and closes it when the test ends.
func open(t testing.TB, cfg journal.Config) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}

// forEachBackend runs the test body once per backend, in parallel subtests.
func forEachBackend(t *testing.T, body func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			body(t, b)
		})
	}
}

func dispatch(i int) journal.Dispatch {
	return journal.Dispatch{
		RequestID: fmt.Sprintf("req-%d", i), IdempotencyKey: fmt.Sprintf("key-%d", i), Dependency: "crm",
		Tool: "update_customer", Args: map[string]any{"id": i, "name": "Zoë"}, Attempt: 1, PolicyVersion: "v7",
	}
}
