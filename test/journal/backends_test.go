package journal_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testKey is the journal secret of the PostgreSQL tests (SQLite ones use the key file
// beside the database, as by default).
var testKey = []byte("0123456789abcdef-journal-tests")

// backend is one place a journal can live, with raw access for tests that must reach
// past the API (to corrupt a row, or fake a newer schema).
type backend struct {
	name string
	// config returns a Config for a fresh, empty journal of this backend.
	config func(t testing.TB) journal.Config
	// raw runs a statement directly on the database of cfg.
	raw func(t testing.TB, cfg journal.Config, stmt string, args ...any)
	// column reads one column of every row a query returns, as bytes: what a reader
	// of the database sees.
	column func(t testing.TB, cfg journal.Config, query string) [][]byte
}

var backends = []backend{
	{
		name: "sqlite",
		config: func(t testing.TB) journal.Config {
			return journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "journal.db")}}
		},
		raw: func(t testing.TB, cfg journal.Config, stmt string, args ...any) {
			db, err := sql.Open("sqlite", cfg.Backend.(sqlite.Backend).Path)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec(stmt, args...)
			require.NoError(t, err)
		},
		column: func(t testing.TB, cfg journal.Config, query string) [][]byte {
			db, err := sql.Open("sqlite", cfg.Backend.(sqlite.Backend).Path)
			require.NoError(t, err)
			defer db.Close()
			rows, err := db.Query(query)
			require.NoError(t, err)
			defer rows.Close()
			var out [][]byte
			for rows.Next() {
				var v []byte
				require.NoError(t, rows.Scan(&v))
				out = append(out, v)
			}
			require.NoError(t, rows.Err())
			return out
		},
	},
	{
		name: "postgres",
		config: func(t testing.TB) journal.Config {
			dsn := testenv.PostgresDSN(t)
			prefix := testenv.PostgresJournalPrefix(t)
			return journal.Config{Backend: postgres.Backend{DSN: dsn}, Prefix: prefix, HashKey: testKey}
		},
		raw: func(t testing.TB, cfg journal.Config, stmt string, args ...any) {
			c, err := pgx.Connect(context.Background(), testenv.PostgresDSN(t))
			require.NoError(t, err)
			defer c.Close(context.Background())
			_, err = c.Exec(context.Background(), stmt, args...)
			require.NoError(t, err)
		},
		column: func(t testing.TB, cfg journal.Config, query string) [][]byte {
			c, err := pgx.Connect(context.Background(), testenv.PostgresDSN(t))
			require.NoError(t, err)
			defer c.Close(context.Background())
			rows, err := c.Query(context.Background(), query)
			require.NoError(t, err)
			defer rows.Close()
			var out [][]byte
			for rows.Next() {
				var v []byte
				require.NoError(t, rows.Scan(&v))
				out = append(out, v)
			}
			require.NoError(t, rows.Err())
			return out
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

func fakeClock() *clock.Fake { return clock.NewFake(time.Time{}) }

// prefixOf is the table prefix cfg's journal uses.
func prefixOf(cfg journal.Config) string {
	if cfg.Prefix == "" {
		return journal.DefaultPrefix
	}
	return cfg.Prefix
}
