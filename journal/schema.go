package journal

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/agentbreaker/agentbreaker/journal/internal/store"
)

// migration is one numbered step of the schema. Steps are applied in order, each
// version once, inside one transaction with the version row, so a crash mid-way leaves
// the previous version intact. Never edit a released step: add a new one.
type migration struct {
	version int64
	name    string
	stmts   func(d store.Dialect, p string) []string
}

var migrations = []migration{
	{1, "dispatch intents", func(d store.Dialect, p string) []string {
		return []string{
			`CREATE TABLE ` + p + `intents (
				id TEXT PRIMARY KEY,
				request_id TEXT NOT NULL,
				idempotency_key TEXT NOT NULL,
				dependency TEXT NOT NULL,
				tool TEXT NOT NULL,
				args_hash TEXT NOT NULL,
				args ` + d.Blob + `,
				attempt BIGINT NOT NULL,
				policy_version TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				owner TEXT NOT NULL,
				checksum TEXT NOT NULL,
				state TEXT NOT NULL,
				outcome TEXT NOT NULL,
				error_class TEXT NOT NULL,
				updated_at BIGINT NOT NULL,
				note TEXT NOT NULL
			)`,
			`CREATE INDEX ` + p + `intents_state ON ` + p + `intents (state, created_at)`,
			`CREATE INDEX ` + p + `intents_op ON ` + p + `intents (tool, args_hash)`,
			`CREATE INDEX ` + p + `intents_key ON ` + p + `intents (idempotency_key)`,
		}
	}},
	{2, "admission queue", func(d store.Dialect, p string) []string {
		return []string{
			`CREATE TABLE ` + p + `queue (
				id TEXT PRIMARY KEY,
				dependency TEXT NOT NULL,
				tool TEXT NOT NULL,
				request_id TEXT NOT NULL,
				idempotency_key TEXT NOT NULL,
				priority BIGINT NOT NULL,
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL,
				replay_policy TEXT NOT NULL,
				payload ` + d.Blob + `,
				state TEXT NOT NULL,
				reason TEXT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
			`CREATE INDEX ` + p + `queue_next ON ` + p + `queue (dependency, state, priority DESC, created_at, id)`,
			`CREATE INDEX ` + p + `queue_expiry ON ` + p + `queue (state, expires_at)`,
		}
	}},
	{3, "commit markers", func(d store.Dialect, p string) []string {
		// One row per committed batch that inserts no intent (an intent's row is proof
		// enough), written in the batch's transaction, so that a batch whose commit went
		// through but whose acknowledgement was lost is known to have committed and is
		// not written twice. Old rows are pruned.
		return []string{
			`CREATE TABLE ` + p + `commits (
				id TEXT PRIMARY KEY,
				at BIGINT NOT NULL
			)`,
			`CREATE INDEX ` + p + `commits_at ON ` + p + `commits (at)`,
		}
	}},
}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int64 { return migrations[len(migrations)-1].version }

// migrate brings the schema up to date. Concurrent migrators are serialised: SQLite by
// its write lock, PostgreSQL by an advisory lock keyed by the prefix.
func migrate(ctx context.Context, s store.Store, prefix string, nowMicros int64) (from int64, err error) {
	d := s.Dialect()
	err = s.Tx(ctx, func(q store.Querier) error {
		if d.Lock != "" {
			if _, err := q.Exec(ctx, d.Lock, lockID(prefix)); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+prefix+`schema_migrations (
			version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
			return err
		}
		from = 0
		if err := q.Query(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+prefix+`schema_migrations`, nil,
			func(scan func(...any) error) error { return scan(&from) }); err != nil {
			return err
		}
		if from > SchemaVersion() {
			return fmt.Errorf("%w: tables %q are at version %d, this build knows up to %d",
				ErrSchemaTooNew, prefix, from, SchemaVersion())
		}
		for _, m := range migrations {
			if m.version <= from {
				continue
			}
			for _, stmt := range m.stmts(d, prefix) {
				if _, err := q.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if _, err := q.Exec(ctx, `INSERT INTO `+prefix+`schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, nowMicros); err != nil {
				return err
			}
		}
		return nil
	})
	return from, err
}

// lockID maps a prefix to an advisory lock number.
func lockID(prefix string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentbreaker/journal/" + prefix))
	return int64(h.Sum64())
}
