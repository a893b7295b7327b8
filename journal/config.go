package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
	// DefaultKeyFile is Config.KeyFile when neither it nor Config.HashKey is set, or ""
	// when the backend has no safe default (then one of them is required).
	DefaultKeyFile() string
}

// Config configures a Journal.
type Config struct {
	// Backend is sqlite.Backend{...} or postgres.Backend{...}. Required.
	Backend Backend
	// Prefix starts the name of every table, so that several journals (or tests) can
	// share a database: lower-case letters, digits and '_', starting with a letter, at
	// most 30 characters. Defaults to "agentbreaker_".
	Prefix string
	// StoreArguments keeps each call's canonical arguments beside their hash, and the
	// queue's payloads (a queued call's arguments) as given. They may hold personal
	// data, so by default only the keyed hash of the arguments is kept, and payloads
	// are sealed (AES-256-GCM under a key derived from HashKey, bound to the item's
	// id): a reader of the database sees neither. Defaults to false.
	StoreArguments bool
	// HashKey is the journal's secret: the argument hash is an HMAC-SHA-256 under it,
	// so that a reader of the database cannot recover short arguments (a PIN, a phone
	// number) by hashing guesses, and queued payloads are sealed with AES-256-GCM under
	// a key derived from it (see StoreArguments). At least 16 bytes; keep it stable and
	// out of the database: hashes made under another key do not match, and sealed
	// payloads cannot be opened. Processes sharing a database must share it. Defaults
	// to the key in KeyFile.
	HashKey []byte
	// KeyFile holds the secret when HashKey is empty: hex, at least 16 bytes. A
	// missing file is created with 32 random bytes, readable by its owner only (0600).
	// Defaults to the backend's DefaultKeyFile: the database path plus ".key" for
	// SQLite. PostgreSQL has no default: its processes run on several machines and
	// must share one key, so give HashKey or KeyFile (Open refuses neither).
	KeyFile string
	// Lookups settle intents left without a final outcome, by dependency key: they ask
	// the dependency whether the call was applied (by idempotency key, typically).
	// Defaults to none: every such intent waits for an operator.
	Lookups map[string]StatusLookup
	// InFlightGrace keeps Reconcile away from open intents that another process wrote
	// this recently, when the backend cannot tell whether that process is alive (an
	// owner that predates owner leases). Owners the backend can judge are settled at
	// once when dead and never while alive (see Reconcile). Defaults to the backend's
	// DefaultGrace: 0 for SQLite (one process owns the file) and 2m for PostgreSQL.
	// Negative means 0.
	InFlightGrace time.Duration
	// MaxBatch caps how many writes are committed together. From 1 to 10000.
	// Defaults to 256.
	MaxBatch int
	// MaxCommitDelay caps how long the group committer waits for writers that were
	// waiting on the last commit to join the next one (it waits at most a quarter of
	// the last commit's duration, and never for a lone writer). Defaults to 1ms;
	// negative turns the wait off.
	MaxCommitDelay time.Duration
	// WriteTimeout bounds one commit. Defaults to 30s.
	WriteTimeout time.Duration
	// Clock stamps records. Defaults to the system clock.
	Clock clock.Clock
	// Logger, when set, receives reconciliation decisions and write failures.
	// Defaults to none.
	Logger *slog.Logger
	// ReconcileOnOpen makes Open run Reconcile once before it returns, so that a
	// restarted process settles what a crash left open with no call of its own; the
	// report's counts go to Logger (one record) and a failed reconciliation fails
	// Open. Defaults to false: call Reconcile yourself at start-up.
	ReconcileOnOpen bool
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
		return bad("Prefix", c.Prefix, "must be lower-case letters, digits and '_', start with a letter and have at most 30 characters")
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
	if c.MaxCommitDelay == 0 {
		c.MaxCommitDelay = time.Millisecond
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.WriteTimeout < 0 {
		return bad("WriteTimeout", c.WriteTimeout, "must be positive")
	}
	c.Clock = clock.OrSystem(c.Clock)
	if len(c.HashKey) > 0 {
		if len(c.HashKey) < minKeyLen {
			return bad("HashKey", fmt.Sprintf("%d bytes", len(c.HashKey)), fmt.Sprintf("must be at least %d bytes", minKeyLen))
		}
		return nil
	}
	if c.KeyFile == "" {
		c.KeyFile = c.Backend.DefaultKeyFile()
	}
	if c.KeyFile == "" {
		return bad("HashKey", "empty", "is required with this backend (or KeyFile): processes sharing the database must share the key, and a key kept in the database would be readable by its readers")
	}
	return nil
}

// minKeyLen is the shortest secret accepted: 128 bits.
const minKeyLen = 16

// loadKey reads the secret from path, creating the file with a fresh random key when
// it is missing. Processes creating it at once agree on one key, and none reads a
// half-written file: the key is written and synced under a temporary name first,
// then linked to path, which fails when another process linked first.
func loadKey(path string) ([]byte, error) {
	bad := func(problem string) error {
		return &ConfigError{Package: "journal", Field: "KeyFile", Value: path, Problem: problem}
	}
	for range 2 {
		raw, err := os.ReadFile(path)
		if err == nil {
			key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
			if err != nil {
				return nil, bad("does not hold a hex key")
			}
			if len(key) < minKeyLen {
				return nil, bad(fmt.Sprintf("holds %d bytes; at least %d are required", len(key), minKeyLen))
			}
			return key, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, bad("cannot be read: " + err.Error())
		}
		key, err := createKey(path)
		if errors.Is(err, fs.ErrExist) {
			continue // another process created it first: read its key
		}
		if err != nil {
			return nil, bad("cannot be created: " + err.Error())
		}
		return key, nil
	}
	return nil, bad("was created and removed while being read")
}

// createKey writes a fresh key to path, which must not exist yet.
func createKey(path string) ([]byte, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := os.Link(tmp, path); err != nil {
		return nil, err
	}
	return key, nil
}
