package fleet_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/internal/redistest"
)

// Issue 26e: replicas × dependencies against a local Redis Cluster of 3 masters with a
// replica each, measured: the sync round's time (p50, p99, max, from a pipeline hook on
// each replica's client, as a user's tracing would see it), Redis commands per replica
// per second, and CPU per replica (this process's CPU over the replicas) and of the
// Redis masters. It runs only when AGENTBREAKER_FLEET_SCALE is set, for example
//
//	AGENTBREAKER_FLEET_SCALE=64x200 go test -count=1 -run '^TestScale$' -v ./fleet/
//
// (AGENTBREAKER_FLEET_SCALE_SECONDS sets the measured time, default 20; the interval is
// the default SyncInterval.) The table in docs/fleet.md comes from it.
func TestScale(t *testing.T) {
	spec := os.Getenv("AGENTBREAKER_FLEET_SCALE")
	if spec == "" {
		t.Skip("set AGENTBREAKER_FLEET_SCALE=<replicas>x<dependencies> (for example 64x200) to run")
	}
	rs, ds, ok := strings.Cut(spec, "x")
	replicas, err1 := strconv.Atoi(rs)
	deps, err2 := strconv.Atoi(ds)
	require.True(t, ok && err1 == nil && err2 == nil && replicas > 0 && deps > 0, "AGENTBREAKER_FLEET_SCALE=%q: want <replicas>x<dependencies>", spec)
	seconds := 20
	if v := os.Getenv("AGENTBREAKER_FLEET_SCALE_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		seconds = n
	}
	interval := 500 * time.Millisecond // the default SyncInterval

	c := redistest.StartCluster(t, 3, 1)
	app := fmt.Sprintf("t-scale-%08x", rand.Uint32())
	var mu sync.Mutex
	var rounds []time.Duration
	measuring := false
	var fleets []*fleet.Fleet
	for i := range replicas {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 2,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, // the default OpTimeout
			ContextTimeoutEnabled: true})
		cc.AddHook(roundTimer(func(d time.Duration) {
			mu.Lock()
			if measuring {
				rounds = append(rounds, d)
			}
			mu.Unlock()
		}))
		t.Cleanup(func() { cc.Close() })
		f, err := fleet.New(fleet.Config{Client: cc, App: app, Prefix: "abtest", Replica: fmt.Sprintf("r%d", i),
			Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		for d := range deps {
			b := breaker.MustNew(breaker.Config{Name: fmt.Sprintf("dependency-%d", d)})
			require.NoError(t, f.Attach(b))
		}
		fleets = append(fleets, f)
	}
	wide := func() (n int, classes map[string]int64) {
		classes = map[string]int64{}
		for _, f := range fleets {
			for d := range deps {
				if f.Scope(fmt.Sprintf("dependency-%d", d)) == "fleet" {
					n++
				}
			}
			for c, k := range f.SyncErrors() {
				classes[c] += k
			}
		}
		return n, classes
	}
	start := time.Now()
	for {
		n, classes := wide()
		if n == replicas*deps {
			break
		}
		require.Less(t, time.Since(start), time.Minute, "not within a minute: every breaker of every replica fleet-wide (%d of %d are; sync errors %v)", n, replicas*deps, classes)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("every breaker fleet-wide %s after the start", time.Since(start).Round(time.Millisecond))

	type snap struct {
		at                 time.Time
		commands, failures int64
		cpu                time.Duration
		redisCPU           time.Duration
	}
	take := func() snap {
		s := snap{at: time.Now(), cpu: processCPU(t)}
		for _, f := range fleets {
			st := f.Stats()
			s.commands += st.Commands
			s.failures += st.Failures
		}
		for _, n := range c.Nodes {
			s.redisCPU += pidCPU(t, n.Pid())
		}
		return s
	}
	mu.Lock()
	measuring = true
	mu.Unlock()
	before := take()
	time.Sleep(time.Duration(seconds) * time.Second) // the measured run: real time is what is measured
	after := take()
	mu.Lock()
	measuring = false
	got := slices.Clone(rounds)
	mu.Unlock()

	elapsed := after.at.Sub(before.at).Seconds()
	slices.Sort(got)
	q := func(p float64) time.Duration { return got[min(len(got)-1, int(float64(len(got))*p))] }
	perReplica := float64(after.commands-before.commands) / elapsed / float64(replicas)
	cpuPerReplica := (after.cpu - before.cpu).Seconds() / elapsed / float64(replicas)
	redisCPU := (after.redisCPU - before.redisCPU).Seconds() / elapsed
	t.Logf("| %d × %d | %d | %s | %s | %s | %.0f (expected %.0f) | %.2f ms/s (%.2f%% of a core) | %.0f%% of a core | %d |",
		replicas, deps, len(got), q(0.5).Round(100*time.Microsecond), q(0.99).Round(100*time.Microsecond), got[len(got)-1].Round(100*time.Microsecond),
		perReplica, float64(deps)/interval.Seconds(), cpuPerReplica*1000, cpuPerReplica*100, redisCPU*100, after.failures-before.failures)
	require.Less(t, q(0.99), interval, "sync p99 within the sync interval")
	require.InDelta(t, float64(deps)/interval.Seconds(), perReplica, 0.1*float64(deps)/interval.Seconds(), "commands per replica per second: one script per breaker per interval")
}

// roundTimer is a go-redis hook timing every pipeline the client runs: one per sync
// round (the fleet's only Redis traffic, but the rare NOSCRIPT fallback's second one).
type roundTimer func(time.Duration)

func (roundTimer) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (roundTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (r roundTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		r(time.Since(start))
		return err
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pidCPU is a process's user and system CPU time so far, from /proc (Linux; clock
// ticks of 10ms, the kernel's USER_HZ).
func pidCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// The command name (field 2) is in parentheses and may hold spaces: count after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
