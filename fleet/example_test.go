package fleet_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
)

// Attach an application's dependency map to a fleet: every breaker the map holds, and
// every one it creates later (an unannotated tool, a model endpoint), is shared with
// the other replicas. Calls are decided locally whether or not Redis answers.
func ExampleFleet_AttachMap() {
	redisAddr := os.Getenv("AGENTBREAKER_REDIS_ADDR")
	if redisAddr == "" {
		redisAddr = "127.0.0.1:6379"
	}
	deps, err := dependencymap.New(dependencymap.Config{
		PolicyVersion: "2026-11",
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	if err != nil {
		panic(err)
	}

	// One Fleet per process; every replica of the agent uses the same App.
	f, err := fleet.New(fleet.Config{Addr: redisAddr, App: "support-agent"})
	if err != nil {
		panic(err) // a *agentbreaker.ConfigError naming the field and the value
	}
	defer f.Close()
	// Every breaker of deps, now and those it creates on demand, is shared with the
	// other replicas. The callbacks plugin and model failover take deps as before.
	if err := f.AttachMap(deps); err != nil {
		panic(err)
	}

	b, _ := deps.ForTool("lookup_customer")
	p, err := b.Allow() // decided locally: no Redis round trip, whether or not Redis answers
	fmt.Println("allowed:", err == nil)
	p.Success()
	fmt.Println("attached:", f.Stats().Breakers, f.Scope("crm") != "")
	// Output:
	// allowed: true
	// attached: 1 true
}

func ExampleNew_configError() {
	_, err := fleet.New(fleet.Config{Addr: "127.0.0.1:6379", App: "support-agent", SyncInterval: time.Minute})
	var ce *agentbreaker.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Field)
	fmt.Println(err)
	// Output:
	// true SyncInterval
	// fleet: SyncInterval = 1m0s: must be between 50ms and 10s
}

// Fleet mode on a Redis Cluster (or Sentinel, or a managed Redis) through a client you
// build, with your TLS, pools, hooks and tracing. The fleet never closes it.
func ExampleConfig_client() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		// No longer than the fleet's OpTimeout (200ms by default), so a dead node
		// cannot hold a sync past it.
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true,
	})
	// For Sentinel: redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
	// SentinelAddrs: []string{...}}), or redis.NewUniversalClient with MasterName set.
	defer client.Close() // yours to close, after the fleet

	f, err := fleet.New(fleet.Config{Client: client, App: "support-agent", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	b := breaker.MustNew(breaker.Config{Name: "crm"})
	if err := f.Attach(b); err != nil {
		panic(err)
	}
	p, err := b.Allow() // decided locally, whether or not the cluster answers
	fmt.Println("allowed:", err == nil)
	p.Success()

	// Exactly one of Addr and Client.
	_, err = fleet.New(fleet.Config{Addr: "127.0.0.1:6379", Client: client, App: "support-agent"})
	fmt.Println(err)
	// Output:
	// allowed: true
	// fleet: Client = *redis.ClusterClient: exactly one of Addr and Client is allowed; Addr is "127.0.0.1:6379" too
}
