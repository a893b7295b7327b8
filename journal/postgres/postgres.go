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
	// MaxConns caps the connections used for reads; writes use one more, and the
	// owner lease (see journal.Journal.Reconcile) one more. Defaults to 4.
	MaxConns int
}

// DefaultGrace is two minutes. It applies only to open intents whose owner holds no
// lease the journal can check (written by a build without owner leases): every
// journal holds one, and its intents are judged by it.
func (Backend) DefaultGrace() time.Duration { return 2 * time.Minute }

// DefaultKeyFile is "": processes sharing a PostgreSQL journal run on several
// machines and must share one secret, so journal.Config.HashKey or KeyFile is required.
func (Backend) DefaultKeyFile() string { return "" }

// Validate checks the fields without connecting; journal.Open calls it.
func (b Backend) Validate() error {
	bad := func(field string, v any, problem string) error {
		return &agentbreaker.ConfigError{Package: "journal/postgres", Field: field, Value: v, Problem: problem}
	}
	switch {
	case b.DSN == "":
		return bad("Backend.DSN", b.DSN, "is required")
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
func (b Backend) Open(ctx context.Context, prefix string) (store.Store, error) {
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
	s := &Store{cfg: cfg, prefix: prefix, idle: make(chan *pgx.Conn, conns), slots: make(chan struct{}, conns)}
	if _, err := s.writer(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Store keeps one connection for the committer and a small pool for reads. (pgx's
// own pool lives in a module this one does not require.) Only the journal uses it.
type Store struct {
	cfg    *pgx.ConnConfig
	prefix string

	// lease holds the owner's session advisory lock: PostgreSQL releases it when this
	// connection ends, which a killed process's does at once (its socket is closed).
	leaseMu sync.Mutex
	lease   *pgx.Conn

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

// LeaseKey is the advisory lock that marks a journal owner (journal.Journal.Owner)
// alive, for tables with prefix: an operator can look for it in pg_locks (objsubid 1,
// the key's high and low 32 bits in classid and objid).
func LeaseKey(prefix, owner string) int64 { return store.OwnerKey(prefix, owner) }

// Claim implements store.Store: it takes a session advisory lock for owner on a
// connection of its own, which stays open until Close.
func (s *Store) Claim(ctx context.Context, owner string) error {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease != nil {
		return fmt.Errorf("journal/postgres: owner lease already claimed")
	}
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, store.OwnerKey(s.prefix, owner)); err != nil {
		c.Close(context.Background())
		return fmt.Errorf("journal/postgres: taking the owner lease: %w", err)
	}
	s.lease = c
	return nil
}

// Live implements store.Store: an owner is alive while some session holds its
// advisory lock in this database.
func (s *Store) Live(ctx context.Context, owners []string) (map[string]bool, bool, error) {
	held := map[int64]bool{}
	err := s.Read(ctx, func(q store.Querier) error {
		return q.Query(ctx, `SELECT classid::bigint, objid::bigint FROM pg_locks
			WHERE locktype = 'advisory' AND objsubid = 1 AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, nil,
			func(scan func(...any) error) error {
				var hi, lo int64 // the key's high and low 32 bits, as unsigned oids
				if err := scan(&hi, &lo); err != nil {
					return err
				}
				held[int64(uint64(hi)<<32|uint64(lo)&0xffffffff)] = true
				return nil
			})
	})
	if err != nil {
		return nil, false, fmt.Errorf("journal/postgres: reading owner leases: %w", err)
	}
	live := make(map[string]bool, len(owners))
	for _, o := range owners {
		live[o] = held[store.OwnerKey(s.prefix, o)]
	}
	return live, true, nil
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
	s.leaseMu.Lock()
	if s.lease != nil {
		s.lease.Close(context.Background()) // ends the session: the lease is released
		s.lease = nil
	}
	s.leaseMu.Unlock()
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
