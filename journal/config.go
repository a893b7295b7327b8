package journal

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/journal/internal/store"
)

// Backend says where the journal keeps its records: sqlite.Backend (package
// journal/sqlite) or postgres.Backend (package journal/postgres). Both hold the same
// schema. The drivers live in those packages, so a program links only the one it
// imports, and a program that takes a journal without opening one links neither.
type Backend interface {
	// Validate checks the backend's own fields without doing I/O.
	Validate() error
	// Open connects to the database. prefix is the journal's table prefix.
	Open(ctx context.Context, prefix string) (store.Store, error)
	// DefaultGrace is Config.InFlightGrace when that is zero.
	DefaultGrace() time.Duration
}

// Config configures a Journal.
type Config struct {
	// Backend is sqlite.Backend{...} or postgres.Backend{...}. Required.
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
	// Defaults to the backend's DefaultGrace: 0 for SQLite (one process owns the
	// file) and 2m for PostgreSQL.
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
		return &ConfigError{Package: "journal", Field: field, Value: v, Problem: problem}
	}
	if c.Backend == nil {
		return bad("Backend", "nil", "is required: sqlite.Backend{Path: ...} or postgres.Backend{DSN: ...}")
	}
	if err := c.Backend.Validate(); err != nil {
		return err
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
		c.InFlightGrace = c.Backend.DefaultGrace()
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
