package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
)

// callInvocation is the little of an invocation context that agent.NewToolContext and
// the callbacks read (as in callbacks' BenchmarkCallbacksPerCall).
type callInvocation struct {
	agent.InvocationContext
	context.Context
}

func (callInvocation) InvocationID() string       { return "callpath-invocation" }
func (callInvocation) Artifacts() agent.Artifacts { return nil }

func (c callInvocation) Deadline() (time.Time, bool) { return c.Context.Deadline() }
func (c callInvocation) Done() <-chan struct{}       { return c.Context.Done() }
func (c callInvocation) Err() error                  { return c.Context.Err() }
func (c callInvocation) Value(k any) any             { return c.Context.Value(k) }

// guardedCall returns one tool call through the callbacks' before- and after-tool
// callbacks, in a closed breaker, reporting to obs (nil: no Observer).
func guardedCall(t testing.TB, obs observe.Calls) func() {
	t.Helper()
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks up."}, func(agent.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok"}, nil
	})
	require.NoError(t, err)
	run := lookup.(interface {
		Run(agent.Context, any) (map[string]any, error)
	}).Run
	var listeners []func(breaker.Event)
	if l, ok := obs.(interface{ BreakerEvent(breaker.Event) }); ok {
		listeners = append(listeners, l.BreakerEvent)
	}
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clock.NewFake(epoch),
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		OnStateChange: listeners})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: obs}})
	p := cb.Plugin()
	before, after := p.BeforeToolCallback(), p.AfterToolCallback()
	inv := callInvocation{Context: context.Background()}
	args := map[string]any{"i": 1}
	var tl tool.Tool = lookup
	return func() {
		ctx := agent.NewToolContext(inv, "", &session.EventActions{}, nil)
		if r, err := before(ctx, tl, args); r != nil || err != nil {
			panic("short-circuited")
		}
		res, err := run(ctx, args)
		_, _ = after(ctx, tl, args, res, err)
	}
}

func observers(t testing.TB) map[string]observe.Calls {
	t.Helper()
	return map[string]observe.Calls{
		"none":          nil,
		"prometheus":    telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry()}),
		"opentelemetry": newOTelPath(t, otelmetrics.Config{}).m,
	}
}

// TestGuardedCallAllocatesNoMoreWithOTel measures, with testing.AllocsPerRun, one tool
// call through the callbacks (closed breaker) with each Observer: the OpenTelemetry
// adapter adds no allocation to the call beyond the Prometheus telemetry's.
func TestGuardedCallAllocatesNoMoreWithOTel(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	got := map[string]float64{}
	for name, obs := range observers(t) {
		call := guardedCall(t, obs)
		call()
		got[name] = testing.AllocsPerRun(200, call)
	}
	t.Logf("allocations per guarded call: no observer %.0f, prometheus %.0f, opentelemetry %.0f", got["none"], got["prometheus"], got["opentelemetry"])
	require.LessOrEqual(t, got["opentelemetry"], got["prometheus"])
}

// BenchmarkGuardedCall is one tool call through the callbacks with each Observer.
// Record it on a quiet machine:
//
//	cd test && go test -run XXX -bench BenchmarkGuardedCall -count 10 ./otelmetrics
func BenchmarkGuardedCall(b *testing.B) {
	for _, name := range []string{"none", "prometheus", "opentelemetry"} {
		b.Run("observer="+name, func(b *testing.B) {
			call := guardedCall(b, observers(b)[name])
			call()
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}
