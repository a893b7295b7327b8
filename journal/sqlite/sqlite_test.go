package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSQLiteIsDurable checks the settings durability rests on, on every connection of
// the pool: WAL mode, synchronous=FULL (2) and a busy timeout.
func TestSQLiteIsDurable(t *testing.T) {
	s, err := Backend{Path: filepath.Join(t.TempDir(), "j.db"), MaxConns: 3}.Open(context.Background(), "")
	require.NoError(t, err)
	defer s.Close()
	db := s.(*Store).DB()
	// Hold three connections at once so that each one is checked, not one reused three times.
	var wg sync.WaitGroup
	var mu sync.Mutex
	hold := make(chan struct{})
	type settings struct {
		mode         string
		sync, busyMs int64
	}
	var seen []settings
	for range 3 {
		wg.Go(func() {
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			var s settings
			if err := conn.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&s.mode); err != nil {
				t.Error(err)
			}
			if err := conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&s.sync); err != nil {
				t.Error(err)
			}
			if err := conn.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&s.busyMs); err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen = append(seen, s)
			if len(seen) == 3 {
				close(hold)
			}
			mu.Unlock()
			<-hold
		})
	}
	wg.Wait()
	require.Len(t, seen, 3)
	for _, s := range seen {
		require.Equal(t, settings{mode: "wal", sync: 2, busyMs: 10000}, s)
	}
}
