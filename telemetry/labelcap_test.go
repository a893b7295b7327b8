package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// TestMaxLabelValuesCapsTheDependencyLabelOnEveryFamily is the regression test for
// breaker series escaping the label cap: with MaxLabelValues 10 and 50 breakers, every
// agentbreaker_breaker_* family showed 50 dependency values, and only calls_total
// was capped (breaker series were checked against the series budget alone).
func TestMaxLabelValuesCapsTheDependencyLabelOnEveryFamily(t *testing.T) {
	t.Parallel()
	const limit, breakers = 10, 50
	deps := map[string]dependencymap.Dependency{}
	for i := range breakers {
		deps[fmt.Sprintf("dep%02d", i)] = dependencymap.Dependency{Policy: breaker.Policy{MinimumCalls: 1}}
	}
	f := newFixture(t, func(c *telemetry.Config) { c.MaxLabelValues = limit })
	m := dependencymap.MustNew(dependencymap.Config{Clock: f.clock, Dependencies: deps,
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent}})
	f.tel.Watch(m)
	ctx := context.Background()
	for name := range deps {
		b, _ := m.Get(name)
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure() // trips it: a transition event for every breaker
		f.tel.CallOutcome(ctx, observe.Call{Dependency: name, Outcome: classify.Failed, Class: classify.ClassHTTP5xx})
	}
	families, err := f.reg.Gather()
	require.NoError(t, err)
	seen := 0
	for _, fam := range families {
		values := map[string]bool{}
		for _, metric := range fam.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "dependency" {
					values[l.GetValue()] = true
				}
			}
		}
		if len(values) == 0 {
			continue
		}
		if strings.HasPrefix(fam.GetName(), "agentbreaker_breaker_") {
			seen++
		}
		require.LessOrEqual(t, len(values), limit+1, "%s has %d dependency values (the cap is %d, plus \"other\")", fam.GetName(), len(values), limit)
		// open_seconds_total has no "other" row by design: a sum over breakers that come
		// and go would not be a counter.
		if fam.GetName() != "agentbreaker_breaker_open_seconds_total" {
			require.True(t, values["other"], "%s folds the breakers past the cap into \"other\"", fam.GetName())
		}
	}
	require.Equal(t, 11, seen, "every agentbreaker_breaker_* family was looked at")
}
