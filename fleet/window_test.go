package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// The fleet's window sums are kept with the state and moved by each replica's change
// (issue 26e): the sum of three replicas' windows is exact and stays exact over many
// syncs (nothing counted twice), follows a replica's new calls, and loses a replica
// that stopped syncing at the next rescan. Every key keeps an expiry.
func TestWindowSumsFollowReplicasComingAndGoing(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	const interval = 50 * time.Millisecond
	policy := testPolicy(time.Minute)
	policy.MinimumCalls = 1000 // never trips: the sums alone are watched
	var fleets []*fleet.Fleet
	var breakers []*breaker.Breaker
	for i, calls := range []int{5, 7, 11} {
		f := newFleet(t, addr, app, string(rune('a'+i)), interval)
		b := breaker.MustNew(breaker.Config{Name: "crm", Policy: policy})
		require.NoError(t, f.Attach(b))
		for range calls {
			p, err := b.Allow()
			require.NoError(t, err)
			p.Success()
		}
		fleets, breakers = append(fleets, f), append(breakers, b)
	}
	sums := func(want int64) func() bool {
		return func() bool {
			for _, f := range fleets[:2] {
				if s, _ := f.Status("crm"); s.Calls != want {
					return false
				}
			}
			return true
		}
	}
	testenv.WaitFor(t, 5*time.Second, "every replica reads 23 calls", sums(23))
	waitSyncs(t, 10, fleets...) // over more than three rescans
	for _, f := range fleets {
		s, _ := f.Status("crm")
		require.Equal(t, int64(23), s.Calls, "a repeated report is not counted twice")
	}
	p, err := breakers[0].Allow()
	require.NoError(t, err)
	p.Failure()
	testenv.WaitFor(t, 5*time.Second, "a's new failed call reaches the sums", func() bool {
		s, _ := fleets[1].Status("crm")
		return s.Calls == 24 && s.Failures == 1
	})

	require.NoError(t, fleets[2].Close()) // c stops syncing: its 11 calls drop out
	testenv.WaitFor(t, 5*time.Second, "c's report drops out at a rescan", sums(13))

	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	prefix := fleets[0].KeyPrefix("v1", "crm")
	for _, k := range []string{"state", "win"} {
		ttl, err := c.PTTL(context.Background(), prefix+k).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "%s has an expiry", k)
		require.LessOrEqual(t, ttl, 24*time.Hour)
	}
}
