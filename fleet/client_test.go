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
