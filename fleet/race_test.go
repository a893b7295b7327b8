package fleet_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// Replicas (each with its own client) trip, force, reset and probe one breaker at the
// same time: Redis keeps one history, generation after generation without a gap or a
// repeat, each transition starting from the state the previous one left, and the
// replicas end in the state Redis holds.
func TestConcurrentTripsForcesAndResetsKeepOneHistory(t *testing.T) {
	t.Parallel()
	addr, app := testApp(t)
	const replicas = 4
	fleets := make([]*fleet.Fleet, replicas)
	bs := make([]*breaker.Breaker, replicas)
	for i := range replicas {
		fleets[i] = newFleet(t, addr, app, fmt.Sprintf("r%d", i), 50*time.Millisecond)
		bs[i] = breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(20 * time.Millisecond)})
		require.NoError(t, fleets[i].Attach(bs[i]))
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for time.Now().Before(deadline) {
				switch op := rng.IntN(200); {
				case op == 0:
					b.ForceOpen("race")
				case op == 1:
					b.ForceClosed("race")
				case op < 3:
					b.Reset("race")
				case op < 40:
					fail(b, 10)
				default:
					if p, err := b.Allow(); err == nil {
						if rng.IntN(2) == 0 {
							p.Success()
						} else {
							p.Failure()
						}
					}
				}
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()

	h := history(t, addr, histKey(fleets[0], "crm"))
	checkHistory(t, h)
	require.Greater(t, len(h), 10, "the race made few transitions: %+v", h)
	counts := map[string]int{}
	for _, tr := range h {
		counts[tr.Cause]++
	}
	t.Logf("%d transitions: %v", len(h), counts)

	// Settle: one operator action, and every replica follows it.
	bs[0].ForceOpen("settle")
	testenv.WaitFor(t, 5*time.Second, "every replica forced open", func() bool {
		for i, b := range bs {
			if s, _ := fleets[i].Status("crm"); b.State() != breaker.ForcedOpen || s.State != breaker.ForcedOpen {
				return false
			}
		}
		return true
	})
	h = history(t, addr, histKey(fleets[0], "crm"))
	checkHistory(t, h)
	require.Equal(t, "forced_open", h[len(h)-1].To)
}
