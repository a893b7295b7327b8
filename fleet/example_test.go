package fleet_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentbreaker/agentbreaker"
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
