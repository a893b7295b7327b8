package telemetry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// BenchmarkCallOutcome is the per-call cost on the hot path: labels, counter,
// histogram, a disabled debug log and a non-recording span.
func BenchmarkCallOutcome(b *testing.B) {
	tel := telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry()})
	ctx := context.Background()
	c := observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: classify.Succeeded, Class: classify.ClassNone, Elapsed: 20 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tel.CallOutcome(ctx, c)
		}
	})
}

// BenchmarkScrape100Breakers is one scrape of a map with 100 dependencies.
func BenchmarkScrape100Breakers(b *testing.B) {
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	deps := map[string]dependencymap.Dependency{}
	for i := range 100 {
		deps[fmt.Sprintf("dep-%03d", i)] = dependencymap.Dependency{}
	}
	tel.Watch(dependencymap.MustNew(dependencymap.Config{Dependencies: deps}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
