package journal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func (Postgres) defaultGrace() time.Duration { return 2 * time.Minute }

func (b Postgres) open(ctx context.Context, _ string) (store, error) {
	cfg, err := pgx.ParseConfig(b.DSN)
	if err != nil {
		return nil, fmt.Errorf("journal: postgres: Backend.DSN: %w", err)
	}
	conns := b.MaxConns
	if conns == 0 {
		conns = 4
	}
	s := &pgStore{cfg: cfg, idle: make(chan *pgx.Conn, conns), slots: make(chan struct{}, conns)}
	// Connect once now, so a bad DSN or an unreachable server fails Open.
	if _, err := s.writer(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// pgStore keeps one connection for the committer and a small pool for reads. (pgx's
// own pool lives in a module this one does not require.)
type pgStore struct {
	cfg *pgx.ConnConfig

	wmu sync.Mutex
	w   *pgx.Conn

	idle  chan *pgx.Conn
	slots chan struct{}
}

func (s *pgStore) dialect() dialect {
	return dialect{name: "postgres", blob: "BYTEA", lock: "SELECT pg_advisory_xact_lock($1)"}
}

func (s *pgStore) connect(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("journal: postgres: %w", err)
	}
	return c, nil
}

// writer returns the write connection, reconnecting when it broke. Caller holds wmu,
// or is Open before anyone else can call.
func (s *pgStore) writer(ctx context.Context) (*pgx.Conn, error) {
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

func (s *pgStore) tx(ctx context.Context, f func(q querier) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, err := s.writer(ctx)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return f(pgQuerier{tx}) })
}

func (s *pgStore) read(ctx context.Context, f func(q querier) error) error {
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

func (s *pgStore) close() error {
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

func (q pgQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.x.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q pgQuerier) query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
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
