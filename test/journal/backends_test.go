package journal_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The backends, a fresh journal per test and the runner of a body per backend are
// internal/journaltest's. Here: raw access for tests that must reach past the API (to
// corrupt a row, fake a newer schema, or read what a reader of the database sees).

// raw runs a statement directly on the database of cfg.
func raw(t testing.TB, cfg journal.Config, stmt string, args ...any) {
	t.Helper()
	if b, ok := cfg.Backend.(sqlite.Backend); ok {
		db, err := sql.Open("sqlite", b.Path)
		require.NoError(t, err)
		defer db.Close()
		_, err = db.Exec(stmt, args...)
		require.NoError(t, err)
		return
	}
	c, err := pgx.Connect(context.Background(), testenv.PostgresDSN(t))
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Exec(context.Background(), stmt, args...)
	require.NoError(t, err)
}

// column reads one column of every row a query returns, as bytes.
func column(t testing.TB, cfg journal.Config, query string) [][]byte {
	t.Helper()
	var out [][]byte
	scan := func(next func() bool, scan func(...any) error, err func() error) {
		for next() {
			var v []byte
			require.NoError(t, scan(&v))
			out = append(out, v)
		}
		require.NoError(t, err())
	}
	if b, ok := cfg.Backend.(sqlite.Backend); ok {
		db, err := sql.Open("sqlite", b.Path)
		require.NoError(t, err)
		defer db.Close()
		rows, err := db.Query(query)
		require.NoError(t, err)
		defer rows.Close()
		scan(rows.Next, rows.Scan, rows.Err)
		return out
	}
	c, err := pgx.Connect(context.Background(), testenv.PostgresDSN(t))
	require.NoError(t, err)
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), query)
	require.NoError(t, err)
	defer rows.Close()
	scan(rows.Next, rows.Scan, rows.Err)
	return out
}

func fakeClock() *clock.Fake { return clock.NewFake(time.Time{}) }

// prefixOf is the table prefix cfg's journal uses.
func prefixOf(cfg journal.Config) string {
	if cfg.Prefix == "" {
		return journal.DefaultPrefix
	}
	return cfg.Prefix
}
