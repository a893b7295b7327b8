package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
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

// Issue 26b and c: fleet mode on a Redis Cluster and on Sentinel, the master (or
// primary) of a breaker killed mid-run. Every replica builds its own go-redis client,
// as a user would, and gives it to Config.Client.

// topology is a Redis deployment the failover scenario runs on.
type topology struct {
	// client builds one replica's client.
	client func(t *testing.T) redis.UniversalClient
	// master returns the server that holds key now.
	master func(t *testing.T, key string) *redistest.Server
	// healed waits until a replica has taken over from killed.
	healed func(t *testing.T, killed *redistest.Server)
	// perSlot: servers other than the killed one keep serving their keys.
	perSlot bool
	// switchover, when set, moves the keys of the control breakers to another server
	// by a coordinated failover (the old server answers MOVED), once the kill is over.
	switchover func(t *testing.T, key string)
	// beforeKill, when set, runs once every breaker is fleet-wide.
	beforeKill func(t *testing.T, f *fleet.Fleet, names []string)
}

// clientTimeout is the clients' dial, read and write timeout: no longer than the
// fleet's OpTimeout, so that a dead node cannot hold a sync past it.
const clientTimeout = 80 * time.Millisecond

func TestClusterMasterKilledMidRun(t *testing.T) {
	// Not parallel: its six (or five) servers and the failover load the machine, and
	// the other tests' timeouts are short.
	c := redistest.StartCluster(t, 3, 1)
	var perNode nodePipelines
	first := true
	runFailover(t, topology{
		client: func(t *testing.T) redis.UniversalClient {
			cc := redis.NewClusterClient(&redis.ClusterOptions{
				Addrs:       c.Addrs(),
				DialTimeout: clientTimeout, ReadTimeout: clientTimeout, WriteTimeout: clientTimeout,
				ContextTimeoutEnabled: true, PoolSize: 4,
			})
			if first { // the first replica's: count what each node receives
				first = false
				cc.OnNewNode(func(node *redis.Client) { node.AddHook(perNode.hook(node.Options().Addr)) })
			}
			return cc
		},
		// One sync round is one pipeline per master that holds breakers, sent by
		// go-redis in parallel, carrying exactly the scripts of that master's breakers.
		beforeKill: func(t *testing.T, f *fleet.Fleet, names []string) {
			want := map[string]int64{}
			for _, n := range names {
				want[c.MasterOf(t, f.KeyPrefix("v1", n)+"state").Addr]++
			}
			syncs0, _, _, _ := f.Counters()
			p0, s0 := perNode.snapshot()
			waitSyncs(t, 5, f)
			syncs1, _, _, _ := f.Counters()
			p1, s1 := perNode.snapshot()
			rounds := syncs1 - syncs0
			// (A round that timed out on a loaded machine sends its pipelines too, so
			// there may be more pipelines than successful rounds; never fewer, and the
			// same number to every master.)
			var sent int64 = -1
			for addr, n := range want {
				p := p1[addr] - p0[addr]
				require.GreaterOrEqual(t, p, rounds, "pipelines to %s in %d rounds", addr, rounds)
				require.True(t, sent < 0 || p == sent, "%d pipelines to %s, %d to another master", p, addr, sent)
				sent = p
				require.Equal(t, p*n, s1[addr]-s0[addr], "scripts to %s in %d pipelines", addr, p)
			}
			t.Logf("one round = %d node pipelines (breakers per master %v)", len(want), want)
		},
		master: func(t *testing.T, key string) *redistest.Server { return c.MasterOf(t, key) },
		healed: func(t *testing.T, _ *redistest.Server) { c.WaitHealthy(t, 30*time.Second) },
		// The test cluster keeps serving the slots of live masters
		// (cluster-require-full-coverage no).
		perSlot:    true,
		switchover: func(t *testing.T, key string) { c.ManualFailover(t, c.MasterOf(t, key)) },
	})
}

func TestSentinelPrimaryKilledMidRun(t *testing.T) {
	// Not parallel: its six (or five) servers and the failover load the machine, and
	// the other tests' timeouts are short.
	s := redistest.StartSentinel(t, 1, 3)
	runFailover(t, topology{
		client: func(t *testing.T) redis.UniversalClient {
			// NewUniversalClient with MasterName builds a failover client.
			return redis.NewUniversalClient(&redis.UniversalOptions{
				MasterName: redistest.MasterName, Addrs: s.SentinelAddrs(),
				DialTimeout: clientTimeout, ReadTimeout: clientTimeout, WriteTimeout: clientTimeout,
				ContextTimeoutEnabled: true, PoolSize: 4,
			})
		},
		master: func(t *testing.T, _ string) *redistest.Server { return s.Server(s.MasterAddr()) },
		healed: func(t *testing.T, killed *redistest.Server) { s.WaitFailedOver(t, killed, 30*time.Second) },
	})
}

// runFailover: three replicas share twelve breakers, calls run on all of them, then
// the server holding breaker "dep-0" is killed (SIGKILL). No call fails and no call
// waits; dep-0 goes local on every replica (on a cluster, a breaker held by another
// master stays fleet-wide); one replica trips dep-0 alone while it has no master and
// the others, unable to hear it, stay closed; once a replica is promoted every
// breaker is fleet-wide again and the others learn the trip; then exactly one probe
// per cooldown reaches dep-0 from the whole fleet.
func runFailover(t *testing.T, topo topology) {
	const (
		interval  = 100 * time.Millisecond
		opTimeout = 80 * time.Millisecond
		cooldown  = 300 * time.Millisecond
		target    = "dep-0"
	)
	app := fmt.Sprintf("t-failover-%08x", rand.Uint32())
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("dep-%d", i)
	}
	policy := testPolicy(cooldown)
	policy.CooldownMultiplier = 1

	type replica struct {
		name     string
		f        *fleet.Fleet
		breakers map[string]*breaker.Breaker
	}
	var reps []*replica
	for i := range 3 {
		client := topo.client(t)
		t.Cleanup(func() { client.Close() })
		r := &replica{name: fmt.Sprintf("r%d", i), breakers: map[string]*breaker.Breaker{}}
		f, err := fleet.New(fleet.Config{Client: client, App: app, Prefix: "abtest", Replica: r.name,
			// LocalAfter well above the interval, so that a slow sync on a loaded machine
			// does not make a replica local (and probe alone) while Redis is there; well
			// below the seconds a failover takes.
			SyncInterval: interval, OpTimeout: opTimeout, LocalAfter: time.Second, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		r.f = f
		for _, n := range names {
			b := breaker.MustNew(breaker.Config{Name: n, Policy: policy})
			require.NoError(t, f.Attach(b))
			r.breakers[n] = b
		}
		reps = append(reps, r)
	}
	allScope := func(names []string, want string) func() bool {
		return func() bool {
			for _, r := range reps {
				for _, n := range names {
					if r.f.Scope(n) != want {
						return false
					}
				}
			}
			return true
		}
	}
	testenv.WaitFor(t, 10*time.Second, "every breaker fleet-wide", allScope(names, "fleet"))

	if topo.beforeKill != nil {
		topo.beforeKill(t, reps[0].f, names)
	}
	key := reps[0].f.KeyPrefix("v1", target) + "state"
	victim := topo.master(t, key)
	require.NotNil(t, victim)
	var control []string // breakers on other servers
	if topo.perSlot {
		for _, n := range names[1:] {
			if topo.master(t, reps[0].f.KeyPrefix("v1", n)+"state") != victim {
				control = append(control, n)
			}
		}
		require.NotEmpty(t, control, "every breaker hashed to one master")
	}

	// Calls on every breaker but the target, on every replica, all along: none may
	// fail, none may wait.
	var calls, failures atomic.Int64
	var mu sync.Mutex
	var durations []time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			defer func() { mu.Lock(); durations = append(durations, local...); mu.Unlock() }()
			for {
				for _, n := range names[1:] {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					p, err := r.breakers[n].Allow()
					local = append(local, time.Since(start))
					calls.Add(1)
					if err != nil {
						failures.Add(1)
						continue
					}
					p.Success()
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}

	describe := func() string {
		out := ""
		for _, r := range reps {
			for _, n := range names {
				st, _ := r.f.Status(n)
				out += fmt.Sprintf("%s/%s: %s %s err=%q gen=%d; ", r.name, n, r.f.Scope(n), r.breakers[n].State(), st.Error, st.Generation)
			}
			out += fmt.Sprintf("stats %+v\n", r.f.Stats())
		}
		return out
	}
	// waitFor is testenv.WaitFor, and says where every breaker stands when it fails.
	waitFor := func(limit time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "not within %s: %s:\n%s", limit, what, describe())
			time.Sleep(5 * time.Millisecond)
		}
	}
	killed := time.Now()
	victim.Kill()
	// dep-0 has no server: every replica decides it alone.
	waitFor(10*time.Second, "dep-0 local on every replica, the control breakers fleet-wide", func() bool {
		return allScope([]string{target}, "local")() && (len(control) == 0 || allScope(control, "fleet")())
	})
	wentLocal := time.Since(killed)
	for _, r := range reps {
		require.Contains(t, []string{fleet.ClassUnreachable, fleet.ClassTimeout}, r.f.ScopeError(target), "replica %s", r.name)
	}
	a, b, c := reps[0].breakers[target], reps[1].breakers[target], reps[2].breakers[target]
	fail(a, 10)
	require.Equal(t, breaker.Open, a.State(), "r0 trips alone")
	require.Equal(t, "local", reps[0].f.Scope(target), "r0 tripped while dep-0 had no server")
	for _, other := range []*breaker.Breaker{b, c} {
		p, err := other.Allow()
		require.NoError(t, err, "the other replicas cannot have heard of r0's trip")
		p.Success()
	}

	// A replica is promoted: every breaker follows the fleet again and r1, r2 learn of
	// r0's trip.
	topo.healed(t, victim)
	waitFor(20*time.Second, "every breaker fleet-wide again and r1, r2 open", func() bool {
		return allScope(names, "fleet")() && b.State() == breaker.Open && c.State() == breaker.Open
	})
	converged := time.Since(killed)
	close(stop)
	wg.Wait()
	require.Zero(t, failures.Load(), "calls on breakers that stayed closed failed")
	require.Positive(t, calls.Load())
	slices.Sort(durations)
	p999 := durations[len(durations)*999/1000]
	slowest := durations[len(durations)-1]
	t.Logf("%d calls during the failover, none failed; Allow p99.9 %s, slowest %s; dep-0 local on every replica %s after the kill, fleet converged %s after it",
		len(durations), p999, slowest, wentLocal.Round(time.Millisecond), converged.Round(time.Millisecond))
	require.Less(t, slowest, opTimeout, "a call waited on Redis")
	for _, r := range reps {
		// One for the kill; a loaded machine may add a timed-out round later.
		require.Positive(t, r.f.Stats().Outages, "replica %s: the outage is counted", r.name)
	}

	// A coordinated failover of a control breaker's master (maintenance): the demoted
	// master answers MOVED, go-redis follows it within the round, and the control
	// breakers never go local.
	if topo.switchover != nil {
		stopWatch := make(chan struct{})
		var wentLocal atomic.Value
		var watch sync.WaitGroup
		watch.Add(1)
		go func() {
			defer watch.Done()
			for {
				select {
				case <-stopWatch:
					return
				default:
				}
				for _, r := range reps {
					for _, n := range control {
						if r.f.Scope(n) != "fleet" {
							wentLocal.CompareAndSwap(nil, r.name+"/"+n)
						}
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		moved := time.Now()
		failuresBefore := int64(0)
		for _, r := range reps {
			failuresBefore += r.f.Stats().Failures
		}
		topo.switchover(t, reps[0].f.KeyPrefix("v1", control[0])+"state")
		waitSyncs(t, 5, reps[0].f, reps[1].f, reps[2].f)
		close(stopWatch)
		watch.Wait()
		require.Nil(t, wentLocal.Load(), "a breaker went local during a coordinated failover")
		failuresAfter := int64(0)
		for _, r := range reps {
			failuresAfter += r.f.Stats().Failures
		}
		t.Logf("coordinated failover of %s's master: every control breaker stayed fleet-wide (%s; %d failed scripts meanwhile, all replicas)",
			control[0], time.Since(moved).Round(time.Millisecond), failuresAfter-failuresBefore)
	}

	// One probe per cooldown from the whole fleet, on the promoted server.
	hist := func() []transition {
		t.Helper()
		cl := topo.client(t)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		msgs, err := cl.XRange(ctx, reps[0].f.KeyPrefix("v1", target)+"hist", "-", "+").Result()
		require.NoError(t, err)
		return parseHistory(msgs)
	}
	before := len(hist())
	type probe struct {
		replica string
		at      time.Time
	}
	var probesMu sync.Mutex
	var probes []probe
	stop = make(chan struct{})
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := r.breakers[target]
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p, err := br.Allow(); err == nil {
					probesMu.Lock()
					probes = append(probes, probe{r.name, time.Now()})
					probesMu.Unlock()
					p.Failure() // still down: open again for a cooldown
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	const rounds = 4
	testenv.WaitFor(t, 20*time.Second, fmt.Sprintf("%d probes", rounds), func() bool {
		probesMu.Lock()
		defer probesMu.Unlock()
		return len(probes) >= rounds
	})
	close(stop)
	wg.Wait()
	h := hist()
	checkHistory(t, h)
	var halfOpens []transition
	for _, tr := range h[before:] {
		if tr.To == "half_open" {
			halfOpens = append(halfOpens, tr)
		}
	}
	// Each probe came from the replica holding that half-open period's lease; the last
	// lease may have been granted after the probers stopped.
	require.GreaterOrEqual(t, len(halfOpens), len(probes), "more probes than half-open periods: %+v\n%+v", probes, halfOpens)
	require.LessOrEqual(t, len(halfOpens), len(probes)+1, "%+v\n%+v", probes, halfOpens)
	for i, p := range probes {
		require.Equal(t, halfOpens[i].By, p.replica, "probe %d from a replica without the lease", i)
		if i+1 < len(halfOpens) {
			require.True(t, p.at.Before(halfOpens[i+1].At.Add(50*time.Millisecond)), "two probes in one half-open period")
		}
		if i > 0 {
			gap := halfOpens[i].At.Sub(halfOpens[i-1].At)
			require.GreaterOrEqual(t, gap, cooldown-10*time.Millisecond, "half-open periods closer than a cooldown")
		}
	}
}

// parseHistory reads history stream entries.
func parseHistory(msgs []redis.XMessage) []transition {
	var out []transition
	for _, m := range msgs {
		var tr transition
		fmt.Sscan(fmt.Sprint(m.Values["gen"]), &tr.Gen)
		tr.From, tr.To = fmt.Sprint(m.Values["from"]), fmt.Sprint(m.Values["to"])
		tr.Cause, tr.By = fmt.Sprint(m.Values["cause"]), fmt.Sprint(m.Values["by"])
		var ms int64
		fmt.Sscan(fmt.Sprint(m.Values["at"]), &ms)
		tr.At = time.UnixMilli(ms)
		out = append(out, tr)
	}
	return out
}

// nodePipelines counts, per node address, the pipelines a cluster client's node
// clients ran and the commands in them.
type nodePipelines struct {
	mu                 sync.Mutex
	pipelines, scripts map[string]int64
}

func (n *nodePipelines) hook(addr string) redis.Hook { return nodeHook{n, addr} }

func (n *nodePipelines) snapshot() (pipelines, scripts map[string]int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pipelines, scripts = map[string]int64{}, map[string]int64{}
	for k, v := range n.pipelines {
		pipelines[k] = v
	}
	for k, v := range n.scripts {
		scripts[k] = v
	}
	return pipelines, scripts
}

type nodeHook struct {
	n    *nodePipelines
	addr string
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.mu.Lock()
		if h.n.pipelines == nil {
			h.n.pipelines, h.n.scripts = map[string]int64{}, map[string]int64{}
		}
		h.n.pipelines[h.addr]++
		for _, c := range cmds {
			if c.Name() == "evalsha" {
				h.n.scripts[h.addr]++
			}
		}
		h.n.mu.Unlock()
		return next(ctx, cmds)
	}
}
