package journal

import "context"

// store is what a backend provides: transactions for the committer and plain reads.
// Both backends take the same SQL text ($1 placeholders, which SQLite accepts too);
// only the DDL differs, through dialect.
type store interface {
	// tx runs f in one transaction and commits it; the commit is durable when tx
	// returns nil. The journal calls it from one goroutine at a time.
	tx(ctx context.Context, f func(q querier) error) error
	// read runs f outside any explicit transaction; it may be called concurrently.
	read(ctx context.Context, f func(q querier) error) error
	dialect() dialect
	close() error
}

// querier runs statements. Arguments are string, int64, []byte (nil for NULL).
type querier interface {
	exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	query(ctx context.Context, sql string, args []any, row func(scan func(dest ...any) error) error) error
}

// dialect holds what differs between the backends' SQL.
type dialect struct {
	name string
	blob string // the binary column type
	// lock, when set, is run first in the migration transaction to serialise
	// migrators; $1 is a number derived from the table prefix.
	lock string
}
