// Package store is the contract between the journal and its database backends
// (journal/sqlite, journal/postgres). It lives under internal so that only those
// packages implement it; users pick a backend and never see it.
package store

import (
	"context"
	"hash/fnv"
)

// Store is what a backend provides: transactions for the committer and plain reads.
// Both backends take the same SQL text ($1 placeholders, which SQLite accepts too);
// only the DDL differs, through Dialect.
type Store interface {
	// Tx runs f in one transaction and commits it; the commit is durable when Tx
	// returns nil. The journal calls it from one goroutine at a time.
	Tx(ctx context.Context, f func(q Querier) error) error
	// Read runs f outside any explicit transaction; it may be called concurrently.
	Read(ctx context.Context, f func(q Querier) error) error
	Dialect() Dialect
	// Claim takes the lease that marks owner (one Journal instance) as alive, held
	// until Close or until the process dies. SQLite needs none (one process owns the
	// file).
	Claim(ctx context.Context, owner string) error
	// Live reports which of owners hold their lease. known is false when the backend
	// cannot tell; then every owner counts as possibly alive.
	Live(ctx context.Context, owners []string) (live map[string]bool, known bool, err error)
	Close() error
}

// OwnerKey maps a journal owner to a 64-bit lease number (an advisory lock), kept
// apart per table prefix.
func OwnerKey(prefix, owner string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentbreaker/journal/owner/" + prefix + "/" + owner))
	return int64(h.Sum64())
}

// Querier runs statements. Arguments are string, int64, []byte (nil for NULL).
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, sql string, args []any, row func(scan func(dest ...any) error) error) error
}

// Dialect holds what differs between the backends' SQL.
type Dialect struct {
	Name string
	Blob string // the binary column type
	// Lock, when set, is run first in the migration transaction to serialise
	// migrators; $1 is a number derived from the table prefix.
	Lock string
}
