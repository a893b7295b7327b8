package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// testApp returns a fresh App name, so tests can share one Redis and run in parallel,
// and removes the test's keys when it ends.
func testApp(t *testing.T) (addr, app string) {
	t.Helper()
	addr = testRedis(t)
	app = "t-" + regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-") + fmt.Sprintf("-%08x", rand.Uint32())
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "abtest:"+app+":*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return addr, app
}

func testRedis(t *testing.T) string {
	t.Helper()
	return testenv.RedisAddr(t)
}

func newFleet(t *testing.T, addr, app, replica string, interval time.Duration) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Config{
		Addr: addr, App: app, Prefix: "abtest", Replica: replica,
		SyncInterval: interval, OpTimeout: min(interval, 100*time.Millisecond),
	})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// testPolicy trips after 10 calls at half failures, cools down for cooldown, without
// jitter, so the fleet's timing is exact.
func testPolicy(cooldown time.Duration) breaker.Policy {
	return breaker.Policy{
		MinimumCalls: 10, FailureRateThreshold: 0.5, Window: 10 * time.Second,
		Cooldown: cooldown, Jitter: -1, ProbeLease: 2 * time.Second, Version: "v1",
	}
}

// transition is one entry of a breaker's history stream in Redis.
type transition struct {
	Gen       int64
	From, To  string
	Cause, By string
	At        time.Time
}

func history(t *testing.T, addr, key string) []transition {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	msgs, err := c.XRange(context.Background(), key, "-", "+").Result()
	require.NoError(t, err)
	return parseHistory(msgs)
}

// checkHistory asserts one consistent history: generations 1, 2, 3... without gaps or
// repeats, each transition starting where the previous one ended.
func checkHistory(t *testing.T, h []transition) {
	t.Helper()
	prev := "closed"
	for i, tr := range h {
		require.Equal(t, int64(i+1), tr.Gen, "transition %d: %+v", i, tr)
		require.Equal(t, prev, tr.From, "transition %d (gen %d) starts from %s after %s", i, tr.Gen, tr.From, prev)
		prev = tr.To
	}
}

func histKey(f *fleet.Fleet, name string) string { return f.KeyPrefix("v1", name) + "hist" }

func fail(b *breaker.Breaker, n int) {
	for range n {
		if p, err := b.Allow(); err == nil {
			p.Failure()
		}
	}
}

// waitSyncs waits until every fleet has run n more sync rounds, successful or failed:
// "nothing changed" is then checked over rounds of the sync loop, not over a stretch
// of time a loaded machine may not give it.
func waitSyncs(t *testing.T, n int64, fleets ...*fleet.Fleet) {
	t.Helper()
	rounds := func(f *fleet.Fleet) int64 {
		syncs, failures, _, _ := f.Counters()
		return syncs + failures
	}
	start := make([]int64, len(fleets))
	for i, f := range fleets {
		start[i] = rounds(f)
	}
	testenv.WaitFor(t, 10*time.Second, fmt.Sprintf("%d more sync rounds", n), func() bool {
		for i, f := range fleets {
			if rounds(f) < start[i]+n {
				return false
			}
		}
		return true
	})
}
