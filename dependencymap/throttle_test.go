package dependencymap_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

func TestThrottleIsPerDependencyAndOptIn(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	m := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search", "suggest"}, Throttle: &throttle.Config{MinRequests: 1},
			Priorities: map[string]throttle.Priority{"suggest": throttle.Low}},
		"crm":     {Tools: []string{"lookup"}},
		"billing": {Tools: []string{"charge"}, Priorities: map[string]throttle.Priority{"charge": throttle.Critical}},
	}})
	s := m.ThrottleFor("web_search")
	require.NotNil(t, s.Throttle)
	require.Same(t, s.Throttle, m.ThrottleFor("suggest").Throttle, "one throttle per dependency")
	require.Equal(t, throttle.Low, m.ThrottleFor("suggest").Priority)
	require.Nil(t, m.ThrottleFor("lookup").Throttle)
	require.Nil(t, m.ThrottleFor("charge").Throttle)
	require.Equal(t, throttle.Critical, m.ThrottleFor("charge").Priority)
	require.Equal(t, throttle.Normal, m.ThrottleFor("unknown").Priority)
	th, ok := m.Throttle("search")
	require.True(t, ok)
	require.Same(t, s.Throttle, th)
	require.Len(t, m.Throttles(), 1)

	// The map's clock drives the throttle's window.
	th.Report(true)
	th.Report(false)
	th.Report(false)
	th.Report(false)
	require.Positive(t, th.Probability())
	fc.Advance(throttle.DefaultWindow)
	require.Zero(t, th.Probability())
}

func TestThrottleBadInput(t *testing.T) {
	t.Parallel()
	_, err := dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"a"}, Throttle: &throttle.Config{K: 0.2}},
	}})
	var ce *agentbreaker.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, `Dependencies["search"].Throttle.K`, ce.Field)
	require.ErrorContains(t, err, `dependencymap: Dependencies["search"].Throttle.K = 0.2`)

	_, err = dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"a"}, Priorities: map[string]throttle.Priority{"a": 7}},
	}})
	require.ErrorContains(t, err, `Priorities["a"] = Priority(7)`)
}
