// Command telemetry is row (c) of the weight table: (b) plus Prometheus metrics.
package main

import (
	"log"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/bench/weight/app"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

func main() {
	tel := telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry(), Logger: slog.Default()})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: tel}})
	if err := app.Run(guard.Plugin()); err != nil {
		log.Fatal(err)
	}
}
