package fleet_test

import (
	"errors"
	"fmt"
	"log/slog"
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
	deps, err := dependencymap.New(dependencymap.Config{
		PolicyVersion: "2026-11",
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	if err != nil {
		panic(err)
	}
	addr := os.Getenv("AGENTBREAKER_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	f, err := fleet.New(fleet.Config{
		Addr:   addr,
		App:    "support-agent",
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := f.AttachMap(deps); err != nil {
		panic(err)
	}

	// The callbacks plugin and model failover take deps as they always do.
	b, _ := deps.ForTool("lookup_customer")
	p, err := b.Allow() // local: no Redis round trip
	fmt.Println("allowed:", err == nil)
	p.Success()
	fmt.Println("attached:", f.Stats().Breakers)
	// Output:
	// allowed: true
	// attached: 1
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
