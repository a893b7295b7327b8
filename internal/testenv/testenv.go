// Package testenv gives tests the external services they need, in one place: where
// they are, and what happens when one is missing. Locally a missing service skips the
// test with one line saying which and how to provide it; in CI (CI=true) it fails, so
// a broken CI machine cannot pass by skipping.
package testenv

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgresDSN is used when AGENTBREAKER_POSTGRES_DSN is unset.
const DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var (
	pgOnce sync.Once
	pgErr  error
)

// PostgresDSN returns the DSN of the test PostgreSQL (AGENTBREAKER_POSTGRES_DSN, or
// DefaultPostgresDSN). When the server cannot be reached it skips t with one line,
// or fails it when CI=true. The server is tried once per test binary.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := PostgresDSNUnchecked()
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			pgErr = err
			return
		}
		pgErr = c.Ping(ctx)
		c.Close(ctx)
	})
	if pgErr != nil {
		unreachable(t, "PostgreSQL", "AGENTBREAKER_POSTGRES_DSN", pgErr)
	}
	return dsn
}

// PostgresDSNUnchecked returns the DSN without trying the server, for child processes
// of a test that already checked it.
func PostgresDSNUnchecked() string {
	return envOr("AGENTBREAKER_POSTGRES_DSN", DefaultPostgresDSN)
}

// unreachable skips t because a service it needs did not answer, or fails it under
// CI=true, where every service must be up. err is printed on one line (pgx's errors
// span several).
func unreachable(t testing.TB, service, envVar string, err error) {
	t.Helper()
	why := strings.Join(strings.Fields(err.Error()), " ")
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s at %s is required in CI: %s", service, envVar, why)
	}
	t.Skipf("%s unreachable (set %s): %s", service, envVar, why)
}

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// JournalTables names the tables a journal creates under its prefix.
var JournalTables = []string{"intents", "queue", "commits", "schema_migrations"}

// PostgresJournalPrefix returns a table prefix of its own for one test on the shared
// test PostgreSQL (tests and runs in parallel stay apart), and drops the journal's
// tables under it when the test ends. The server must have been checked with
// PostgresDSN.
func PostgresJournalPrefix(t testing.TB) string {
	t.Helper()
	prefix := "t" + strings.ToLower(rand.Text()[:12]) + "_"
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), PostgresDSNUnchecked())
		if err != nil {
			t.Errorf("dropping the test tables %s*: %v", prefix, err)
			return
		}
		defer c.Close(context.Background())
		for _, tbl := range JournalTables {
			if _, err := c.Exec(context.Background(), "DROP TABLE IF EXISTS "+prefix+tbl); err != nil {
				t.Errorf("dropping %s%s: %v", prefix, tbl, err)
			}
		}
	})
	return prefix
}

// WaitFor polls cond until it holds, failing t when limit passes first: a bounded wait
// for real I/O (a server, a proxy, another process), never a wait for time to pass.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Command returns the path of the program name, looked up in PATH. When it is missing
// it skips t with one line naming the Debian package that provides it, or fails t
// when CI=true, where every program the tests need is installed.
func Command(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		why := name + " not found in PATH (Debian package " + debianPackage + ")"
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI", why)
		}
		t.Skip(why)
	}
	return path
}
