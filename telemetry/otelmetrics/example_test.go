package otelmetrics_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

func Example() {
	// Your meter provider; here the SDK's with a manual reader.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	fc := clock.NewFake(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))

	om := otelmetrics.MustNew(otelmetrics.Config{MeterProvider: mp, Clock: fc})
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: fc,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 2, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){om.BreakerEvent},
	})
	om.Watch(deps)

	var o observe.Observer = om
	crm, _ := deps.ForTool("lookup_customer")
	for range 2 {
		p, _ := crm.Allow()
		o.CallOutcome(context.Background(), observe.Call{Dependency: "crm", Tool: "lookup_customer",
			Outcome: classify.Unknown, Class: classify.ClassHTTP5xx, Elapsed: time.Second})
		p.Failure()
	}
	fc.Advance(10 * time.Second)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch m.Name {
		case "agentbreaker.breaker.state":
			for _, p := range m.Data.(metricdata.Gauge[float64]).DataPoints {
				if p.Value == 1 {
					state, _ := p.Attributes.Value("state")
					fmt.Println("state:", state.AsString())
				}
			}
		case "agentbreaker.breaker.open_duration":
			fmt.Println("open for:", m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value, m.Unit)
		case "agentbreaker.calls":
			fmt.Println("failed calls:", m.Data.(metricdata.Sum[float64]).DataPoints[0].Value)
		}
	}
	// Output:
	// failed calls: 2
	// state: open
	// open for: 10 s
}
