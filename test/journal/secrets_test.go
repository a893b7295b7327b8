package journal_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/stretchr/testify/require"
)

// guesses hashes every 4-digit PIN the ways a reader of the database could: plain
// SHA-256 of the canonical arguments, and HMAC under an empty or guessable key.
func pinGuesses(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for pin := range 10000 {
		p := fmt.Sprintf("%04d", pin)
		canonical, err := retry.CanonicalArgs(map[string]any{"account": "acct-7", "pin": p})
		require.NoError(t, err)
		sum := sha256.Sum256(canonical)
		out[hex.EncodeToString(sum[:])] = p
		for _, k := range []string{"", "agentbreaker", "secret"} {
			m := hmac.New(sha256.New, []byte(k))
			m.Write(canonical)
			out[hex.EncodeToString(m.Sum(nil))] = p
		}
	}
	return out
}

// TestDatabaseReaderCannotRecoverAPIN is issue 14c: with the default configuration, a
// reader of the database who hashes all 10,000 four-digit PINs finds none of the
// stored hashes, while the journal itself (which holds the key) matches its own.
func TestDatabaseReaderCannotRecoverAPIN(t *testing.T) {
	guesses := pinGuesses(t)
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		j := journaltest.Open(t, cfg)
		args := map[string]any{"account": "acct-7", "pin": "4821"}
		d := journaltest.Dispatch(1)
		d.Args = args
		_, err := j.Intend(t.Context(), d)
		require.NoError(t, err)

		stored := column(t, cfg, "SELECT args_hash FROM "+prefixOf(cfg)+"intents")
		require.Len(t, stored, 1)
		pin, found := guesses[string(stored[0])]
		require.False(t, found, "the PIN %s was recovered from the stored hash", pin)
		args2 := column(t, cfg, "SELECT args FROM "+prefixOf(cfg)+"intents")
		require.Nil(t, args2[0], "the arguments are not stored")

		// The journal still recognises the same call (what Unresolved needs).
		own, _, err := j.HashArgs(args)
		require.NoError(t, err)
		require.Equal(t, own, string(stored[0]))
	})
}

// TestKeyHandling: SQLite keeps a generated key beside the database (0600), the same
// on every open; PostgreSQL refuses to open without a key; short keys are refused.
func TestKeyHandling(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	j1, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: path}})
	require.NoError(t, err)
	h1, _, err := j1.HashArgs(map[string]any{"pin": "1234"})
	require.NoError(t, err)
	require.NoError(t, j1.Close())
	st, err := os.Stat(path + ".key")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	raw, err := os.ReadFile(path + ".key")
	require.NoError(t, err)
	db, err := os.ReadFile(path)
	require.NoError(t, err)
	require.False(t, bytes.Contains(db, bytes.TrimSpace(raw)), "the key is not in the database")

	j2, err := journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: path}})
	require.NoError(t, err)
	h2, _, err := j2.HashArgs(map[string]any{"pin": "1234"})
	require.NoError(t, err)
	require.NoError(t, j2.Close())
	require.Equal(t, h1, h2, "the key persists across opens")

	_, err = journal.Open(t.Context(), journal.Config{Backend: postgres.Backend{DSN: "postgres://u@h/db"}})
	var ce *journal.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "HashKey", ce.Field)
	require.ErrorContains(t, err, "is required with this backend (or KeyFile)")

	_, err = journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: path}, HashKey: []byte("short")})
	require.ErrorContains(t, err, "journal: HashKey = 5 bytes: must be at least 16 bytes")

	bad := filepath.Join(dir, "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not hex\n"), 0o600))
	_, err = journal.Open(t.Context(), journal.Config{Backend: sqlite.Backend{Path: path}, KeyFile: bad})
	require.ErrorContains(t, err, "does not hold a hex key")
}

// TestQueuedCardNumberIsNeverInClear is issue 14d: a queued call's arguments are
// sealed, so the card number appears nowhere a reader of the database looks (the
// payload column, and for SQLite every byte of the database and its WAL), while the
// journal returns the payload opened for the replay. A sealed payload that was
// altered fails alone: the other items are still returned.
func TestQueuedCardNumberIsNeverInClear(t *testing.T) {
	const card = "4111111111111111"
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		j := journaltest.Open(t, cfg)
		exp := time.Now().Add(time.Hour)
		it, err := j.Enqueue(t.Context(), journal.QueueItem{Dependency: "payments", Tool: "charge", ExpiresAt: exp,
			Payload: []byte(`{"amount":42,"card":"` + card + `"}`)}, 0)
		require.NoError(t, err)
		other, err := j.Enqueue(t.Context(), journal.QueueItem{Dependency: "payments", Tool: "charge", ExpiresAt: exp,
			Payload: []byte(`{"amount":7,"card":"5500000000000004"}`)}, 0)
		require.NoError(t, err)

		for _, p := range column(t, cfg, "SELECT payload FROM "+prefixOf(cfg)+"queue") {
			require.NotContains(t, string(p), card)
			require.NotContains(t, string(p), "amount")
		}
		if sb, ok := cfg.Backend.(sqlite.Backend); ok {
			for _, f := range []string{sb.Path, sb.Path + "-wal"} {
				raw, err := os.ReadFile(f)
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				require.NoError(t, err)
				require.False(t, bytes.Contains(raw, []byte(card)), "%s holds the card number", filepath.Base(f))
			}
		}
		items, err := j.Queued(t.Context(), "payments", 0)
		require.NoError(t, err)
		require.Len(t, items, 2)
		got := map[string]string{}
		for _, x := range items {
			got[x.ID] = string(x.Payload)
		}
		require.JSONEq(t, `{"amount":42,"card":"`+card+`"}`, got[it.ID], "the replay gets the arguments")

		// Move one item's sealed payload onto the other: bound to its id, it no longer opens.
		raw(t, cfg, "UPDATE "+prefixOf(cfg)+"queue SET payload = (SELECT payload FROM "+prefixOf(cfg)+"queue WHERE id = $1) WHERE id = $2", it.ID, other.ID)
		items, err = j.Queued(t.Context(), "payments", 0)
		var ce *journal.CorruptError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, journal.ErrCorrupt)
		require.Equal(t, []journal.BadRecord{{ID: other.ID, Problem: "sealed payload does not open under this journal's key (another key, or altered)"}}, ce.Records)
		require.Len(t, items, 1, "the healthy item is still returned")
		require.Equal(t, it.ID, items[0].ID)
	})
}

// TestStoreArgumentsKeepsPayloadsInClear: the opt-in is honoured for payloads too.
func TestStoreArgumentsKeepsPayloadsInClear(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		cfg.StoreArguments = true
		j := journaltest.Open(t, cfg)
		_, err := j.Enqueue(context.Background(), journal.QueueItem{Dependency: "crm", ExpiresAt: time.Now().Add(time.Hour),
			Payload: []byte(`{"id":1}`)}, 0)
		require.NoError(t, err)
		require.Equal(t, [][]byte{[]byte(`{"id":1}`)}, column(t, cfg, "SELECT payload FROM "+prefixOf(cfg)+"queue"))
	})
}

// TestOpenersOfAFreshFileAgreeOnOneKey opens one fresh SQLite journal from many
// goroutines at once, as processes starting together do: none is refused (neither a
// locked file nor a half-written key file), all hash with the same key, and no
// temporary key file is left beside the database.
func TestOpenersOfAFreshFileAgreeOnOneKey(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		path := filepath.Join(dir, "journal.db")
		const openers = 8
		hashes := make([]string, openers)
		errs := make([]error, openers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range openers {
			wg.Go(func() {
				<-start
				j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: path}})
				if err != nil {
					errs[i] = err
					return
				}
				defer j.Close()
				hashes[i], _, errs[i] = j.HashArgs(map[string]any{"pin": "1234"})
			})
		}
		close(start)
		wg.Wait()
		for i := range openers {
			require.NoError(t, errs[i], "round %d opener %d", round, i)
			require.Equal(t, hashes[0], hashes[i], "round %d opener %d", round, i)
		}
		names, err := filepath.Glob(filepath.Join(dir, "*.key*"))
		require.NoError(t, err)
		require.Equal(t, []string{path + ".key"}, names)
	}
}
