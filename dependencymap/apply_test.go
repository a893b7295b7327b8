package dependencymap_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/stretchr/testify/require"
)

func liveConfig(version string, minCalls int) dependencymap.Config {
	return dependencymap.Config{
		PolicyVersion: version,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup"}, Policy: breaker.Policy{MinimumCalls: minCalls, Jitter: -1, Cooldown: time.Minute}},
		},
		Models: []dependencymap.ModelEndpoint{{Model: "gemini", Region: "eu"}},
	}
}

func TestApplyKeepsStateAndCarriesTheNewVersion(t *testing.T) {
	fc := clock.NewFake(time.Unix(1000, 0))
	var mu sync.Mutex
	var events []breaker.Event
	cfg := liveConfig("v1", 3)
	cfg.Clock = fc
	cfg.OnStateChange = []func(breaker.Event){func(e breaker.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	m := dependencymap.MustNew(cfg)
	crm, _ := m.ForTool("lookup")
	for range 3 {
		p, _ := crm.Allow()
		p.Failure()
	}
	other, _ := m.ForTool("search") // on demand: the tool default
	before := crm.Snapshot()

	next := liveConfig("v2", 10)
	next.Default.Shadow = true
	if err := m.Apply(next); err != nil {
		t.Fatal(err)
	}
	after := crm.Snapshot()
	if after.State != breaker.Open || after.Window != before.Window || after.Generation != before.Generation {
		t.Errorf("crm after Apply %+v, want it open with %+v", after, before)
	}
	if m.PolicyVersion() != "v2" || after.PolicyVersion != "v2" || crm.Policy().MinimumCalls != 10 || !crm.Shadow() {
		t.Errorf("version %q/%q, minimum calls %d, shadow %v: want v2, 10, true", m.PolicyVersion(), after.PolicyVersion,
			crm.Policy().MinimumCalls, crm.Shadow())
	}
	if other.Policy().Version != "v2" || !other.Shadow() {
		t.Errorf("on-demand breaker: %+v, want the new default", other.Policy())
	}
	late, _ := m.ForTool("late") // created after Apply: the new default
	if late.Policy().Version != "v2" {
		t.Errorf("breaker created after Apply has version %q", late.Policy().Version)
	}
	fc.Advance(time.Minute)
	p, _ := crm.Allow()
	p.Success()
	mu.Lock()
	defer mu.Unlock()
	if last := events[len(events)-1]; last.PolicyVersion != "v2" || last.To != breaker.Closed {
		t.Errorf("event after Apply %+v, want version v2", last)
	}
}

func TestApplyRefusesWholeAndKeepsTheOld(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*dependencymap.Config)
		wantField string
	}{
		{"bad policy", func(c *dependencymap.Config) {
			d := c.Dependencies["crm"]
			d.Policy.Window = time.Millisecond
			c.Dependencies["crm"] = d
		}, `Dependencies["crm"].Policy.Window`},
		{"bad model default", func(c *dependencymap.Config) { c.ModelDefault.FailureRateThreshold = 3 }, "ModelDefault.FailureRateThreshold"},
		{"new tool", func(c *dependencymap.Config) {
			d := c.Dependencies["crm"]
			d.Tools = append(d.Tools, "new")
			c.Dependencies["crm"] = d
		}, `Dependencies["crm"]`},
		{"new dependency", func(c *dependencymap.Config) { c.Dependencies["x"] = dependencymap.Dependency{} }, `Dependencies["x"]`},
		{"models", func(c *dependencymap.Config) { c.Models = nil }, "Models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := dependencymap.MustNew(liveConfig("v1", 3))
			next := liveConfig("v2", 10)
			tt.edit(&next)
			err := m.Apply(next)
			var ce *agentbreaker.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField {
				t.Fatalf("Apply: %v, want a ConfigError naming %s", err, tt.wantField)
			}
			for _, b := range m.Breakers() {
				if b.Policy().Version != "v1" {
					t.Errorf("%s has version %q after a refused Apply", b.Name(), b.Policy().Version)
				}
			}
			if crm, _ := m.Get("crm"); crm.Policy().MinimumCalls != 3 || m.PolicyVersion() != "v1" {
				t.Errorf("crm minimum calls %d, map version %q: want the old 3 and v1", crm.Policy().MinimumCalls, m.PolicyVersion())
			}
		})
	}
}

func TestApplyRetunesThrottles(t *testing.T) {
	cfg := func(k float64, window time.Duration) dependencymap.Config {
		c := liveConfig("v1", 3)
		d := c.Dependencies["crm"]
		d.Throttle = &throttle.Config{K: k, Window: window}
		c.Dependencies["crm"] = d
		return c
	}
	m := dependencymap.MustNew(cfg(2, 0))
	th, _ := m.Throttle("crm")
	require.NoError(t, m.Apply(cfg(3, 0)))
	require.NoError(t, th.SetConfig(throttle.Config{K: 3}), "the throttle's window changed")
	err := m.Apply(cfg(0.5, 0))
	var ce *agentbreaker.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, `Dependencies["crm"].Throttle.K`, ce.Field)
	err = m.Apply(cfg(3, time.Minute))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, `Dependencies["crm"]`, ce.Field, "a new throttle window needs a new map")
}

func TestApplyRetunesAdaptiveLimits(t *testing.T) {
	cfg := func(minLimit, maxLimit int) dependencymap.Config {
		c := liveConfig("v1", 3)
		d := c.Dependencies["crm"]
		d.Adaptive = &adaptivelimit.Config{MinLimit: minLimit, MaxLimit: maxLimit}
		c.Dependencies["crm"] = d
		c.Models[0].Adaptive = &adaptivelimit.Config{MaxLimit: maxLimit}
		return c
	}
	m := dependencymap.MustNew(cfg(2, 100))
	require.NoError(t, m.Apply(cfg(4, 8)))
	for _, key := range []string{"crm", "gemini@eu"} {
		_, hi := m.Limiter(key).Bounds()
		require.Equal(t, 8, hi, key)
	}
	err := m.Apply(cfg(9, 8))
	var ce *agentbreaker.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, `Dependencies["crm"].Adaptive.MinLimit`, ce.Field)
	lo, _ := m.Limiter("crm").Bounds()
	require.Equal(t, 4, lo, "a refused Apply moved the bounds")
	noLimit := cfg(4, 8)
	noLimit.Models[0].Adaptive = nil
	require.ErrorAs(t, m.Apply(noLimit), &ce)
	require.Equal(t, "Models[0]", ce.Field)
}
