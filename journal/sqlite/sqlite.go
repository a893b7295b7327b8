package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/journal/internal/store"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Backend is the embedded backend: one database file, opened with modernc.org/sqlite
// (pure Go, no cgo) in WAL mode with synchronous=FULL, so a commit is on disk when it
// returns. One process should own the file. It is a value; the journal opens it.
type Backend struct {
	// Path is the database file; it is created when missing. Required; it must not
	// contain '?', which would start the driver's parameters.
	Path string
	// BusyTimeout is how long a write waits for another connection's lock.
	// Defaults to 10s.
	BusyTimeout time.Duration
	// MaxConns caps open connections (one writes at a time; the others read).
	// Defaults to 4.
	MaxConns int
}

// DefaultGrace is 0: one process owns the file, so an intent without an outcome
// that this process did not write was left by a process that is gone.
func (Backend) DefaultGrace() time.Duration { return 0 }

// DefaultKeyFile is the database path plus ".key": the journal's secret lives beside
// the database, not in it, so that a copy of the database alone reveals nothing.
func (b Backend) DefaultKeyFile() string { return b.Path + ".key" }

// Validate checks the fields; journal.Open calls it.
func (b Backend) Validate() error {
	bad := func(field string, v any, problem string) error {
		return &agentbreaker.ConfigError{Package: "journal/sqlite", Field: field, Value: v, Problem: problem}
	}
	switch {
	case b.Path == "":
		return bad("Backend.Path", b.Path, "is required")
	case strings.Contains(b.Path, "?"):
		return bad("Backend.Path", b.Path, "must not contain '?'")
	case b.BusyTimeout < 0:
		return bad("Backend.BusyTimeout", b.BusyTimeout, "must not be negative")
	case b.MaxConns < 0:
		return bad("Backend.MaxConns", b.MaxConns, "must not be negative")
	}
	return nil
}

// Open opens the database file; journal.Open calls it.
func (b Backend) Open(ctx context.Context, _ string) (store.Store, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	busy := b.BusyTimeout
	if busy == 0 {
		busy = 10 * time.Second
	}
	conns := b.MaxConns
	if conns == 0 {
		conns = 4
	}
	// Every connection gets WAL and full sync; _txlock=immediate takes the write lock
	// when a transaction begins, so two writers never deadlock upgrading read locks.
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
		b.Path, busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("journal/sqlite: %s: %w", b.Path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := pingWhileBusy(ctx, db, busy); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal/sqlite: %s: %w", b.Path, err)
	}
	return &Store{db: db}, nil
}

// pingWhileBusy opens the first connection, retrying for up to busy while the file
// is locked. SQLite does not call the busy handler for every lock that switching a
// new file to WAL takes, so processes opening the same fresh file at once can be
// refused at once with SQLITE_BUSY; the busy timeout promises they wait instead.
func pingWhileBusy(ctx context.Context, db *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	pause := time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY or one of its extended codes.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// Store is an open SQLite journal database. Only the journal uses it.
type Store struct {
	db *sql.DB
}

// DB returns the database handle, for tests and tools that read the journal's
// tables directly.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect implements store.Store.
func (s *Store) Dialect() store.Dialect { return store.Dialect{Name: "sqlite", Blob: "BLOB"} }

// Tx implements store.Store.
func (s *Store) Tx(ctx context.Context, f func(q store.Querier) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(sqlQuerier{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Claim implements store.Store: one process owns the file, so there is no lease.
func (s *Store) Claim(context.Context, string) error { return nil }

// Live implements store.Store. One process owns the file and holds no lease, so it
// cannot tell: the journal's InFlightGrace (0 by default for SQLite) decides.
func (s *Store) Live(context.Context, []string) (map[string]bool, bool, error) {
	return nil, false, nil
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, f func(q store.Querier) error) error {
	return f(sqlQuerier{s.db})
}

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type sqlQuerier struct{ x sqlRunner }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.x.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := q.x.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
