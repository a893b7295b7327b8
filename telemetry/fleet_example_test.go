package telemetry_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// exampleFleet stands for the *fleet.Fleet of fleet mode, which implements
// telemetry.FleetSource: "crm" decides alone on this replica (Redis unreachable).
type exampleFleet struct{}

func (exampleFleet) Scope(dependency string) string {
	if dependency == "crm" {
		return "local"
	}
	return "fleet"
}

func (exampleFleet) Counters() (syncs, failures, outages, commands int64) { return 120, 8, 1, 240 }

func ExampleTelemetry_WatchFleet() {
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {}, "search": {}},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)
	// In fleet mode: f := fleet.MustNew(...); f.AttachMap(deps); tel.WatchFleet(f)
	tel.WatchFleet(exampleFleet{})

	families, _ := reg.Gather()
	for _, mf := range families {
		switch mf.GetName() {
		case "agentbreaker_fleet_local":
			for _, m := range mf.GetMetric() {
				fmt.Printf("%s{dependency=%q} %g\n", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
			}
		case "agentbreaker_fleet_sync_failures_total", "agentbreaker_fleet_outages_total":
			fmt.Printf("%s %g\n", mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// agentbreaker_fleet_local{dependency="crm"} 1
	// agentbreaker_fleet_local{dependency="search"} 0
	// agentbreaker_fleet_outages_total 1
	// agentbreaker_fleet_sync_failures_total 8
}
