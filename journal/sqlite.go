package journal

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

func (SQLite) defaultGrace() time.Duration { return 0 }

func (b SQLite) open(ctx context.Context, _ string) (store, error) {
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
		return nil, fmt.Errorf("journal: sqlite %s: %w", b.Path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: sqlite %s: %w", b.Path, err)
	}
	return &sqliteStore{db: db}, nil
}

type sqliteStore struct {
	db *sql.DB
}

func (s *sqliteStore) dialect() dialect { return dialect{name: "sqlite", blob: "BLOB"} }

func (s *sqliteStore) tx(ctx context.Context, f func(q querier) error) error {
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

func (s *sqliteStore) read(ctx context.Context, f func(q querier) error) error {
	return f(sqlQuerier{s.db})
}

func (s *sqliteStore) close() error { return s.db.Close() }

type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type sqlQuerier struct{ x sqlRunner }

func (q sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.x.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
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
