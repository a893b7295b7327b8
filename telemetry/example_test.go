package telemetry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

func Example() {
	reg := prometheus.NewRegistry() // your registry, never the global one
	fc := clock.NewFake(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))

	// Telemetry first, so the map can take its listener; then watch the map.
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Clock: fc})
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: fc,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 2, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)

	// The packages that guard calls report to tel (an observe.Observer).
	var o observe.Observer = tel
	crm, _ := deps.ForTool("lookup_customer")
	for range 2 {
		p, _ := crm.Allow()
		o.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Tool: "lookup_customer",
			Outcome: classify.Unknown, Class: classify.ClassHTTP5xx, Elapsed: time.Second})
		p.Failure()
	}
	fc.Advance(10 * time.Second)

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "agentbreaker_breaker_state":
				if m.GetGauge().GetValue() == 1 {
					fmt.Println("state:", m.GetLabel()[1].GetValue())
				}
			case "agentbreaker_breaker_open_duration_seconds":
				fmt.Println("open for:", m.GetGauge().GetValue(), "seconds")
			case "agentbreaker_calls_total":
				fmt.Println("failed calls:", m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// open for: 10 seconds
	// state: open
	// failed calls: 2
}
