package tooltimeout_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// TestOnAbandonReportsStuckCalls: the hook hears when the wrapper gives up on a call
// that keeps running (timeout, or the caller leaving) and when that call returns; a
// panicking hook does not kill the process.
func TestOnAbandonReportsStuckCalls(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		cancelAfter time.Duration
		panicky     bool
	}{
		{name: "timeout"},
		{name: "the caller gives up", cancelAfter: 2 * time.Second},
		{name: "a panicking hook", panicky: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var got []tooltimeout.Abandon
				hook := func(_ context.Context, a tooltimeout.Abandon) {
					mu.Lock()
					got = append(got, a)
					mu.Unlock()
					if tt.panicky {
						panic("hook bug")
					}
				}
				release := make(chan struct{})
				boom := errors.New("late failure")
				w := tooltimeout.MustWrap(&rawTool{name: "stuck", run: func(agent.Context) (map[string]any, error) {
					<-release
					return nil, boom
				}}, tooltimeout.Config{Timeout: 5 * time.Second, OnAbandon: hook})
				parent, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAfter > 0 {
					time.AfterFunc(tt.cancelAfter, cancel)
				}
				_, err := w.Run(&callCtx{ctx: parent}, map[string]any{})
				require.Error(t, err)
				mu.Lock()
				require.Equal(t, []tooltimeout.Abandon{{Tool: "stuck", Limit: 5 * time.Second, Running: 1}}, got)
				mu.Unlock()

				close(release)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, got, 2)
				require.Equal(t, tooltimeout.Abandon{Tool: "stuck", Limit: 5 * time.Second, Returned: true, Running: 0, Err: boom}, got[1])
			})
		})
	}
}
