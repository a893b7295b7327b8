package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/redistest"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// Issue 26a: a fleet on a client the user built shares breakers with a fleet on Addr,
// and leaves that client open when it closes.
func TestClientIsUsedAndNotClosedByTheFleet(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	var hooked hookCount
	client := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 100 * time.Millisecond, ContextTimeoutEnabled: true})
	client.AddHook(&hooked) // a user's hook (tracing, metrics) sees the fleet's traffic
	defer client.Close()
	fc, err := fleet.New(fleet.Config{Client: client, App: app, Prefix: "abtest", Replica: "on-client",
		SyncInterval: 50 * time.Millisecond, OpTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	fa := newFleet(t, addr, app, "on-addr", 50*time.Millisecond)
	bc := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute)})
	ba := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute)})
	require.NoError(t, fc.Attach(bc))
	require.NoError(t, fa.Attach(ba))
	testenv.WaitFor(t, 5*time.Second, "both fleet-wide", func() bool { return fc.Scope("crm") == "fleet" && fa.Scope("crm") == "fleet" })
	fail(bc, 10)
	testenv.WaitFor(t, 5*time.Second, "the fleet on Addr learns the trip made on the client", func() bool { return ba.State() == breaker.Open })
	require.Positive(t, hooked.pipelines.Load(), "the fleet synced through the user's client")

	require.NoError(t, fc.Close())
	require.NoError(t, client.Ping(context.Background()).Err(), "the fleet closed a client it was given")
	require.NoError(t, client.Set(context.Background(), "abtest:"+app+":after-close", "1", time.Minute).Err())
}

// hookCount counts the pipelines a client runs.
type hookCount struct{ pipelines atomic.Int64 }

func (*hookCount) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*hookCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *hookCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		return next(ctx, cmds)
	}
}

// A server that lost its scripts (restarted, SCRIPT FLUSH, a replica just promoted:
// Redis does not replicate its script cache) answers NOSCRIPT; the fleet sends the
// script's text in the same round, so no round fails and the breaker stays fleet-wide.
func TestNoScriptIsAnsweredInTheSameRound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	f, err := fleet.New(fleet.Config{Client: client, App: "noscript", Prefix: "abtest",
		SyncInterval: 100 * time.Millisecond, OpTimeout: 100 * time.Millisecond, LocalAfter: time.Second})
	require.NoError(t, err)
	defer f.Close()
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute)})
	require.NoError(t, f.Attach(b))
	testenv.WaitFor(t, 5*time.Second, "fleet-wide", func() bool { return f.Scope("crm") == "fleet" })
	ctx := context.Background()
	for range 3 {
		before := f.Stats()
		require.NoError(t, client.ScriptFlush(ctx).Err())
		waitSyncs(t, 3, f)
		after := f.Stats()
		require.Equal(t, before.Failures, after.Failures, "a round failed on NOSCRIPT")
		info, err := client.Info(ctx, "memory").Result()
		require.NoError(t, err)
		require.Contains(t, info, "number_of_cached_scripts:1", "the fleet's script is cached again")
		require.Equal(t, "fleet", f.Scope("crm"))
	}
}
