package journal

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// Backend says where the journal keeps its records: [SQLite] or [Postgres]. Both hold
// the same schema.
type Backend interface {
	open(ctx context.Context, prefix string) (store, error)
	defaultGrace() time.Duration
}

// SQLite is the embedded backend: one database file, opened with modernc.org/sqlite
// (pure Go, no cgo) in WAL mode with synchronous=FULL, so a commit is on disk when it
// returns. One process should own the file.
type SQLite struct {
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

// Postgres is the backend for fleets: several processes share one database, with
// github.com/jackc/pgx. A commit is as durable as the server's synchronous_commit makes
// it (on by default).
type Postgres struct {
	// DSN is a pgx connection string, such as
	// "postgres://user@host:5432/db?sslmode=disable". Required.
	DSN string
	// MaxConns caps the connections used for reads; writes use one more. Defaults to 4.
	MaxConns int
}

// Config configures a Journal.
type Config struct {
	// Backend is SQLite{...} or Postgres{...}. Required.
	Backend Backend
	// Prefix starts the name of every table, so that several journals (or tests) can
	// share a database: lower-case letters, digits and '_', starting with a letter, at
	// most 30 characters. Defaults to "agentbreaker_".
	Prefix string
	// StoreArguments keeps each call's canonical arguments beside their hash. They may
	// hold personal data, so by default only the hash is kept. Defaults to false.
	StoreArguments bool
	// HashKey, when set, makes the argument hash an HMAC-SHA-256 under this key, so that
	// short arguments (a phone number) cannot be recovered by hashing guesses. Keep it
	// stable: hashes made under another key do not match. Defaults to none (SHA-256).
	HashKey []byte
	// Lookups settle intents left without a final outcome, by dependency key: they ask
	// the dependency whether the call was applied (by idempotency key, typically).
	// Defaults to none: every such intent waits for an operator.
	Lookups map[string]StatusLookup
	// InFlightGrace keeps Reconcile away from intents another process wrote this
	// recently and has not finished: that process may still be waiting for the answer.
	// Defaults to 0 for SQLite (one process owns the file) and 2m for Postgres.
	// Negative means 0.
	InFlightGrace time.Duration
	// MaxBatch caps how many writes are committed together. From 1 to 10000.
	// Defaults to 256.
	MaxBatch int
	// WriteTimeout bounds one commit. Defaults to 30s.
	WriteTimeout time.Duration
	// Clock stamps records. Defaults to the system clock.
	Clock clock.Clock
	// Logger, when set, receives reconciliation decisions and write failures.
	// Defaults to none.
	Logger *slog.Logger
}

// DefaultPrefix is the table prefix when Config.Prefix is empty.
const DefaultPrefix = "agentbreaker_"

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)

func (c *Config) setDefaults() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Field: field, Value: v, Problem: problem}
	}
	if c.Backend == nil {
		return bad("Backend", "nil", "is required: journal.SQLite{Path: ...} or journal.Postgres{DSN: ...}")
	}
	switch b := c.Backend.(type) {
	case SQLite:
		switch {
		case b.Path == "":
			return bad("Backend.Path", `""`, "is required")
		case strings.Contains(b.Path, "?"):
			return bad("Backend.Path", fmt.Sprintf("%q", b.Path), "must not contain '?'")
		case b.BusyTimeout < 0:
			return bad("Backend.BusyTimeout", b.BusyTimeout, "must not be negative")
		case b.MaxConns < 0:
			return bad("Backend.MaxConns", b.MaxConns, "must not be negative")
		}
	case Postgres:
		switch {
		case b.DSN == "":
			return bad("Backend.DSN", `""`, "is required")
		case b.MaxConns < 0:
			return bad("Backend.MaxConns", b.MaxConns, "must not be negative")
		}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !prefixPattern.MatchString(c.Prefix) {
		return bad("Prefix", fmt.Sprintf("%q", c.Prefix), "must be lower-case letters, digits and '_', start with a letter and have at most 30 characters")
	}
	for dep, l := range c.Lookups {
		if l == nil {
			return bad(fmt.Sprintf("Lookups[%q]", dep), "nil", "lookup is nil")
		}
	}
	if c.InFlightGrace == 0 {
		c.InFlightGrace = c.Backend.defaultGrace()
	}
	c.InFlightGrace = max(0, c.InFlightGrace)
	if c.MaxBatch == 0 {
		c.MaxBatch = 256
	}
	if c.MaxBatch < 1 || c.MaxBatch > 10000 {
		return bad("MaxBatch", c.MaxBatch, "must be between 1 and 10000")
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.WriteTimeout < 0 {
		return bad("WriteTimeout", c.WriteTimeout, "must be positive")
	}
	c.Clock = clock.OrSystem(c.Clock)
	return nil
}
