package fleet_test

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/faultproxy"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// Faults between the replicas and Redis (cut, reset, black hole, delay past the
// timeout): calls keep being answered by the local breakers without an error or a
// wait, the replicas say they are local, one of them trips alone, and when Redis is
// reachable again they converge on its trip.
func TestRedisFaultsLeaveCallsLocalAndReplicasConverge(t *testing.T) {
	addr := testRedis(t)
	faults := []struct {
		name  string
		apply func(p *faultproxy.Proxy)
	}{
		{"cut", func(p *faultproxy.Proxy) { p.Set(faultproxy.Cut) }},
		{"reset", func(p *faultproxy.Proxy) { p.Set(faultproxy.Reset) }},
		{"black_hole", func(p *faultproxy.Proxy) { p.Set(faultproxy.BlackHole) }},
		{"delay", func(p *faultproxy.Proxy) { p.SetDelay(400 * time.Millisecond) }},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			_, app := testApp(t)
			proxy, err := faultproxy.New(addr)
			require.NoError(t, err)
			defer proxy.Close()
			const interval, opTimeout = 100 * time.Millisecond, 50 * time.Millisecond
			var logs syncbuf.Buffer
			mk := func(replica string) (*fleet.Fleet, *breaker.Breaker) {
				f, err := fleet.New(fleet.Config{Addr: proxy.Addr(), App: app, Prefix: "abtest", Replica: replica,
					SyncInterval: interval, OpTimeout: opTimeout,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				require.NoError(t, err)
				t.Cleanup(func() { f.Close() })
				b := breaker.MustNew(breaker.Config{Name: "crm", Policy: testPolicy(time.Minute),
					OnStateChange: []func(breaker.Event){func(e breaker.Event) {
						t.Logf("%s %s: %s -> %s (%s)", time.Now().Format("15:04:05.000"), replica, e.From, e.To, e.Reason)
					}}})
				require.NoError(t, f.Attach(b))
				return f, b
			}
			fa, a := mk("a")
			fb, b := mk("b")
			wide := func(f *fleet.Fleet) bool { s, _ := f.Status("crm"); return s.FleetWide }
			testenv.WaitFor(t, 5*time.Second, "fleet-wide", func() bool { return wide(fa) && wide(fb) })
			require.Equal(t, "fleet", fa.Scope("crm"))
			require.Equal(t, "", fa.Scope("unknown"))

			// Calls on b all along: none may fail or wait.
			var calls, firstErr, slowest atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					p, err := b.Allow()
					if err != nil {
						firstErr.CompareAndSwap(0, time.Now().UnixNano())
					} else {
						p.Success()
					}
					if d := int64(time.Since(start)); d > slowest.Load() {
						slowest.Store(d)
					}
					calls.Add(1)
					time.Sleep(time.Millisecond)
				}
			}()

			fault.apply(proxy)
			testenv.WaitFor(t, 5*time.Second, "both local", func() bool { return !wide(fa) && !wide(fb) })
			require.Equal(t, "local", fa.Scope("crm"))
			fail(a, 10) // a trips alone: Redis cannot hear it
			require.Equal(t, breaker.Open, a.State())
			waitSyncs(t, 3, fa, fb)
			require.Equal(t, breaker.Closed, b.State(), "b cannot have learned of a's trip without Redis")
			require.False(t, wide(fa) || wide(fb))

			healed := time.Now()
			t.Logf("%s healed", healed.Format("15:04:05.000"))
			proxy.Set(faultproxy.Pass)
			testenv.WaitFor(t, 10*time.Second, "b learns of a's trip once Redis is back", func() bool {
				return b.State() == breaker.Open && wide(fa) && wide(fb)
			})
			close(stop)
			wg.Wait()
			// b's calls went on until it learned of a's trip from Redis; none failed before.
			require.Positive(t, calls.Load())
			if fe := firstErr.Load(); fe != 0 {
				require.False(t, time.Unix(0, fe).Before(healed), "a call of b failed during the fault, at %s", time.Unix(0, fe).Format("15:04:05.000"))
			}
			require.Less(t, time.Duration(slowest.Load()), opTimeout, "a call waited on Redis")

			h := history(t, addr, histKey(fa, "crm"))
			checkHistory(t, h)
			require.Len(t, h, 1, "%+v", h)
			require.Equal(t, "a", h[0].By)
			for _, f := range []*fleet.Fleet{fa, fb} {
				require.Equal(t, int64(1), f.Stats().Outages, "one outage, counted once")
			}
			require.Equal(t, 2, strings.Count(logs.String(), "Redis unreachable"), logs.String())
			require.Equal(t, 2, strings.Count(logs.String(), "Redis reachable again"), logs.String())

			b.Reset("test over")
			testenv.WaitFor(t, 5*time.Second, "a learns of b's reset", func() bool { return a.State() == breaker.Closed })
		})
	}
}
