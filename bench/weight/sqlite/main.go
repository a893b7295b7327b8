// Command sqlite is row (d) of the weight table: (c) plus the dispatch-intent journal
// on SQLite.
package main

import (
	"context"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/bench/weight/app"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "weight")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	j, err := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(dir, "intents.db")}})
	if err != nil {
		log.Fatal(err)
	}
	defer j.Close()
	tel := telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry(), Logger: slog.Default()})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent},
	})
	tel.Watch(deps)
	r := retry.MustNew(retry.Config{Journal: j.ForRetry()})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{Retry: r, Journal: j}, Observability: callbacks.Observability{Observer: tel}})
	if err := app.Run(guard.Plugin()); err != nil {
		log.Fatal(err)
	}
}
