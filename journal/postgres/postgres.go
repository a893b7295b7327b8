package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/journal/internal/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Backend is the backend for fleets: several processes share one database, through
// github.com/jackc/pgx. A commit is as durable as the server's synchronous_commit
// makes it (on by default). It is a value; the journal opens it.
type Backend struct {
	// DSN is a pgx connection string, such as
	// "postgres://user@host:5432/db?sslmode=disable". Required.
	DSN string
	// MaxConns caps the connections used for reads; writes use one more. Defaults to 4.
	MaxConns int
}

// DefaultGrace is two minutes: other processes may be waiting for the answers to
// the intents they wrote.
func (Backend) DefaultGrace() time.Duration { return 2 * time.Minute }

// Validate checks the fields without connecting; journal.Open calls it.
func (b Backend) Validate() error {
	bad := func(field string, v any, problem string) error {
		return &agentbreaker.ConfigError{Package: "journal/postgres", Field: field, Value: v, Problem: problem}
	}
	switch {
	case b.DSN == "":
		return bad("Backend.DSN", `""`, "is required")
	case b.MaxConns < 0:
		return bad("Backend.MaxConns", b.MaxConns, "must not be negative")
	}
	if _, err := pgx.ParseConfig(b.DSN); err != nil {
		// The parser's message can quote the DSN, password included: name the field only.
		return bad("Backend.DSN", "(not shown: it may hold a password)", "is not a valid pgx connection string")
	}
	return nil
}

// Open connects once, so that a bad DSN or an unreachable server fails journal.Open.
func (b Backend) Open(ctx context.Context, _ string) (store.Store, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(b.DSN)
	if err != nil {
		return nil, err
	}
	conns := b.MaxConns
	if conns == 0 {
		conns = 4
	}
	s := &Store{cfg: cfg, idle: make(chan *pgx.Conn, conns), slots: make(chan struct{}, conns)}
	if _, err := s.writer(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Store keeps one connection for the committer and a small pool for reads. (pgx's
// own pool lives in a module this one does not require.) Only the journal uses it.
type Store struct {
	cfg *pgx.ConnConfig

	wmu sync.Mutex
	w   *pgx.Conn

	idle  chan *pgx.Conn
	slots chan struct{}
}

// Dialect implements store.Store.
func (s *Store) Dialect() store.Dialect {
	return store.Dialect{Name: "postgres", Blob: "BYTEA", Lock: "SELECT pg_advisory_xact_lock($1)"}
}

func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("journal/postgres: %w", err)
	}
	return c, nil
}

// writer returns the write connection, reconnecting when it broke. Caller holds wmu,
// or is Open before anyone else can call.
func (s *Store) writer(ctx context.Context) (*pgx.Conn, error) {
	if s.w != nil && !s.w.IsClosed() {
		return s.w, nil
	}
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.w = c
	return c, nil
}

// Tx implements store.Store.
func (s *Store) Tx(ctx context.Context, f func(q store.Querier) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, err := s.writer(ctx)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return f(pgQuerier{tx}) })
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, f func(q store.Querier) error) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.slots }()
	var c *pgx.Conn
	select {
	case c = <-s.idle:
	default:
	}
	if c == nil || c.IsClosed() {
		var err error
		if c, err = s.connect(ctx); err != nil {
			return err
		}
	}
	err := f(pgQuerier{c})
	if c.IsClosed() || c.PgConn().TxStatus() != 'I' {
		c.Close(context.Background())
		return err
	}
	select {
	case s.idle <- c:
	default:
		c.Close(context.Background())
	}
	return err
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.wmu.Lock()
	if s.w != nil {
		s.w.Close(context.Background())
		s.w = nil
	}
	s.wmu.Unlock()
	for {
		select {
		case c := <-s.idle:
			c.Close(context.Background())
		default:
			return nil
		}
	}
}

// pgRunner is what *pgx.Conn and pgx.Tx share.
type pgRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type pgQuerier struct{ x pgRunner }

func (q pgQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.x.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q pgQuerier) Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := q.x.Query(ctx, query, args...)
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
