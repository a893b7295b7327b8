package journal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"

	"github.com/stretchr/testify/require"
)

// The conformance suite: every test here runs against both backends.

func TestIntentRoundTrip(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := fakeClock()
		cfg := b.Config(t)
		cfg.Clock = fc
		j := journaltest.Open(t, cfg)
		in, err := j.Intend(t.Context(), journaltest.Dispatch(1))
		require.NoError(t, err)
		got, err := j.Get(t.Context(), in.ID)
		require.NoError(t, err)
		require.Equal(t, in, got)
		require.Equal(t, journal.StateOpen, got.State)
		require.Equal(t, fc.Now(), got.CreatedAt)
		require.Nil(t, got.Args, "arguments are not stored unless asked")
		wantHash, _, err := j.HashArgs(map[string]any{"name": "Zoë", "id": 1.0})
		require.NoError(t, err)
		require.Equal(t, wantHash, got.ArgsHash)
		require.NoError(t, got.Verify())
		require.Equal(t, j.Owner(), got.Owner)
	})
}

func TestArgumentsStoredOnlyWhenAsked(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		cfg.StoreArguments = true
		cfg.HashKey = []byte("another secret of 16+ bytes")
		j := journaltest.Open(t, cfg)
		in, err := j.Intend(t.Context(), journaltest.Dispatch(2))
		require.NoError(t, err)
		got, err := j.Get(t.Context(), in.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"id":2,"name":"Zoë"}`, string(got.Args))

		plain := journaltest.Open(t, b.Config(t))
		h1, _, _ := j.HashArgs(map[string]any{"id": 2, "name": "Zoë"})
		h2, _, _ := plain.HashArgs(map[string]any{"id": 2, "name": "Zoë"})
		require.NotEqual(t, h1, h2, "hashes under different keys differ")
		require.Equal(t, h1, got.ArgsHash)
	})
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name string
		c    classify.Classification
		want journal.State
	}{
		{"succeeded", classify.ForClass(classify.ClassNone), journal.StateSucceeded},
		{"failed", classify.ForClass(classify.ClassValidation), journal.StateFailed},
		{"failed before send", classify.ForClass(classify.ClassConnectionRefused), journal.StateFailedBeforeSend},
		{"unknown", classify.ForClass(classify.ClassTimeout), journal.StateUnknown},
	}
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				in, err := j.Intend(t.Context(), journaltest.Dispatch(i))
				require.NoError(t, err)
				require.NoError(t, j.Finish(t.Context(), in.ID, tt.c))
				got, err := j.Get(t.Context(), in.ID)
				require.NoError(t, err)
				require.Equal(t, tt.want, got.State)
				require.Equal(t, tt.c.Outcome, got.Outcome)
				require.Equal(t, tt.c.Class, got.ErrorClass)

				err = j.Finish(t.Context(), in.ID, tt.c)
				var se *journal.StateError
				require.ErrorAs(t, err, &se, "an outcome is recorded once")
				require.Equal(t, string(tt.want), se.State)
				require.ErrorIs(t, err, journal.ErrState)
			})
		}
		require.ErrorIs(t, j.Finish(t.Context(), "in_missing", classify.ForClass(classify.ClassNone)), journal.ErrNotFound)
		err := j.Finish(t.Context(), "x", classify.Classification{})
		require.ErrorContains(t, err, "journal: Classification.Outcome = UNSET: is not an outcome")
	})
}

func TestIntendValidates(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*journal.Dispatch)
		wantErr string
	}{
		{"request id", func(d *journal.Dispatch) { d.RequestID = "" }, `journal: Dispatch.RequestID = "": is required`},
		{"key", func(d *journal.Dispatch) { d.IdempotencyKey = "" }, `Dispatch.IdempotencyKey = ""`},
		{"dependency", func(d *journal.Dispatch) { d.Dependency = "" }, `Dispatch.Dependency = ""`},
		{"tool", func(d *journal.Dispatch) { d.Tool = "" }, `Dispatch.Tool = ""`},
		{"attempt", func(d *journal.Dispatch) { d.Attempt = 0 }, "Dispatch.Attempt = 0: must be at least 1"},
		{"long id", func(d *journal.Dispatch) { d.RequestID = string(make([]byte, 600)) }, "Dispatch.RequestID = "},
		{"bad args", func(d *journal.Dispatch) { d.Args = map[string]any{"c": make(chan int)} }, `Dispatch.Args = 1 argument(s) of tool "update_customer"`},
	}
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d := journaltest.Dispatch(1)
				tt.mod(&d)
				_, err := j.Intend(t.Context(), d)
				require.ErrorContains(t, err, tt.wantErr)
			})
		}
		list, err := j.Intents(t.Context(), journal.Filter{})
		require.NoError(t, err)
		require.Empty(t, list, "nothing invalid was written")
	})
}

func TestConcurrentIntentsAreGroupCommitted(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		const writers, each = 32, 8
		var wg sync.WaitGroup
		ids := make(chan string, writers*each)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					in, err := j.Intend(t.Context(), journaltest.Dispatch(w*1000+i))
					if err != nil {
						t.Error(err)
						return
					}
					ids <- in.ID
				}
			})
		}
		wg.Wait()
		close(ids)
		list, err := j.Intents(t.Context(), journal.Filter{})
		require.NoError(t, err)
		require.Len(t, list, writers*each)
		have := map[string]bool{}
		for _, in := range list {
			have[in.ID] = true
		}
		for id := range ids {
			require.True(t, have[id], "acknowledged intent %s is stored", id)
		}
		st := j.Stats()
		require.EqualValues(t, writers*each, st.Writes)
		require.Less(t, st.Commits, st.Writes, "concurrent intents shared commits")
	})
}

func TestFilterAndUnresolved(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		d := journaltest.Dispatch(5)
		first, err := j.Intend(t.Context(), d)
		require.NoError(t, err)
		require.NoError(t, j.Finish(t.Context(), first.ID, classify.ForClass(classify.ClassConnectionReset)))
		other, err := j.Intend(t.Context(), journaltest.Dispatch(6))
		require.NoError(t, err)
		require.NoError(t, j.Finish(t.Context(), other.ID, classify.ForClass(classify.ClassNone)))

		un, err := j.Unresolved(t.Context(), d.Tool, first.ArgsHash)
		require.NoError(t, err)
		require.Len(t, un, 1)
		require.Equal(t, first.ID, un[0].ID)

		byKey, err := j.Intents(t.Context(), journal.Filter{IdempotencyKey: "key-6"})
		require.NoError(t, err)
		require.Len(t, byKey, 1)
		ok, err := j.Intents(t.Context(), journal.Filter{States: []journal.State{journal.StateSucceeded}, Dependency: "crm", Limit: 5})
		require.NoError(t, err)
		require.Len(t, ok, 1)

		require.NoError(t, j.Approve(t.Context(), first.ID))
		un, err = j.Unresolved(t.Context(), d.Tool, first.ArgsHash)
		require.NoError(t, err)
		require.Empty(t, un, "an approved attempt no longer blocks the call")
	})
}

func TestCorruptionIsDetected(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		j := journaltest.Open(t, cfg)
		in, err := j.Intend(t.Context(), journaltest.Dispatch(1))
		require.NoError(t, err)
		p := cfg.Prefix
		if p == "" {
			p = journal.DefaultPrefix
		}
		raw(t, cfg, "UPDATE "+p+"intents SET tool = 'delete_customer' WHERE id = $1", in.ID)
		_, err = j.Get(t.Context(), in.ID)
		require.ErrorIs(t, err, journal.ErrCorrupt)
		require.ErrorContains(t, err, in.ID)
	})
}

func TestMigrations(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		cfg := b.Config(t)
		// Four processes' worth of journals opening fresh tables at once.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				j, err := journal.Open(context.Background(), cfg)
				if err == nil {
					err = j.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		j := journaltest.Open(t, cfg)
		_, err := j.Intend(t.Context(), journaltest.Dispatch(1))
		require.NoError(t, err)
		require.NoError(t, j.Close())

		p := cfg.Prefix
		if p == "" {
			p = journal.DefaultPrefix
		}
		raw(t, cfg, "INSERT INTO "+p+"schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)")
		_, err = journal.Open(context.Background(), cfg)
		require.ErrorIs(t, err, journal.ErrSchemaTooNew)
		require.ErrorContains(t, err, fmt.Sprintf("are at version 99, this build knows up to %d", journal.SchemaVersion()))
	})
}

func TestClose(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j, err := journal.Open(context.Background(), b.Config(t))
		require.NoError(t, err)
		require.NoError(t, j.Close())
		require.NoError(t, j.Close(), "closing twice is harmless")
		_, err = j.Intend(t.Context(), journaltest.Dispatch(1))
		require.ErrorIs(t, err, journal.ErrClosed)
		_, err = j.Pending(t.Context())
		require.ErrorIs(t, err, journal.ErrClosed)
		_, _, err = j.Backlog(t.Context())
		require.ErrorIs(t, err, journal.ErrClosed)
	})
}

func TestCanceledCallerIsNotAcknowledged(t *testing.T) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		j := journaltest.Open(t, b.Config(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := j.Intend(ctx, journaltest.Dispatch(1))
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestOpenValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     journal.Config
		wantErr string
	}{
		{"no backend", journal.Config{}, "journal: Backend = nil: is required"},
		{"no path", journal.Config{Backend: sqlite.Backend{}}, `Backend.Path = "": is required`},
		{"path with query", journal.Config{Backend: sqlite.Backend{Path: "a?b"}}, `Backend.Path = a?b: must not contain '?'`},
		{"no dsn", journal.Config{Backend: postgres.Backend{}}, `Backend.DSN = "": is required`},
		{"bad prefix", journal.Config{Backend: sqlite.Backend{Path: "x"}, Prefix: "Bad-Prefix"}, `Prefix = Bad-Prefix: must be`},
		{"nil lookup", journal.Config{Backend: sqlite.Backend{Path: "x"}, Lookups: map[string]journal.StatusLookup{"crm": nil}}, `Lookups["crm"] = nil`},
		{"batch", journal.Config{Backend: sqlite.Backend{Path: "x"}, MaxBatch: 20000}, "MaxBatch = 20000"},
		{"write timeout", journal.Config{Backend: sqlite.Backend{Path: "x"}, WriteTimeout: -time.Second}, "WriteTimeout = -1s"},
		{"bad dsn", journal.Config{Backend: postgres.Backend{DSN: "postgres://%zz"}}, "journal/postgres: Backend.DSN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := journal.Open(context.Background(), tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
			var ce *journal.ConfigError
			if errors.As(err, &ce) {
				require.NotEmpty(t, ce.Field)
			}
		})
	}
}
