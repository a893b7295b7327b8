package sim_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/sim"
)

func run(t *testing.T, s sim.Scenario) *sim.Result {
	t.Helper()
	r, err := sim.Run(s, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFailedNeverExceedsCallsSent is a regression test: the naive row once showed 577
// failed of 564 calls in a minute, because a call was counted in the bin it was sent in
// and its failure in the bin its timeout ended in.
func TestFailedNeverExceedsCallsSent(t *testing.T) {
	r := run(t, sim.Scenario{})
	for _, sr := range r.Strategies {
		for _, m := range sr.Minutes {
			if m.Failures > m.Calls {
				t.Errorf("%s %s: %d failed of %d calls sent", sr.Name, m.At.Format("15:04"), m.Failures, m.Calls)
			}
		}
		for i := range sr.Series.Calls {
			if sr.Series.Failures[i] > sr.Series.Calls[i] {
				t.Errorf("%s bin %d: %d failed of %d calls sent", sr.Name, i, sr.Series.Failures[i], sr.Series.Calls[i])
			}
		}
	}
}

// TestDefaultsRowRunsThePluginsDefaults is a regression test: the agentbreaker-defaults
// row once ran the breaker package's defaults (a fixed cooldown) instead of what a user
// of the plugin gets from the dependency map (a cooldown that doubles per failed probe).
func TestDefaultsRowRunsThePluginsDefaults(t *testing.T) {
	r := run(t, sim.Scenario{Strategies: []string{sim.StrategyDefaults}})
	m, err := dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"enrichment": {Tools: []string{"lookup"}}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.Get("enrichment")
	want := sim.FilePolicy(b.Policy())
	got := r.Strategies[0].Policy
	if got.CooldownMultiplier != want.CooldownMultiplier || got.CooldownMultiplier <= 1 || got.Window != want.Window ||
		got.MaxCooldown != want.MaxCooldown || got.Jitter != want.Jitter {
		t.Errorf("defaults row ran %+v, a plugin user gets %+v", got, want)
	}
	if !strings.Contains(r.Strategies[0].Description, "×2 per failed probe") {
		t.Errorf("description %q does not say the cooldown grows", r.Strategies[0].Description)
	}
}

// TestTimelineHeaders: one header per column, no word standing for two columns, and
// the rate's grammar.
func TestTimelineHeaders(t *testing.T) {
	r := run(t, sim.Scenario{Strategies: []string{sim.StrategyPolicy}})
	var b bytes.Buffer
	if err := r.WriteTimeline(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, ", 1 turn/s,") || !strings.Contains(out, "UTC") {
		t.Errorf("header: want %q and the time zone:\n%s", "1 turn/s", out)
	}
	var header string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "minute") {
			header = l
			break
		}
	}
	var names []string
	for _, f := range strings.Split(header, "  ") {
		if f = strings.TrimSpace(f); f != "" {
			names = append(names, f)
		}
	}
	want := []string{"minute", "calls sent", "of them failed", "calls rejected", "turns ok", "turns degraded", "turns failed", "breaker"}
	if !slices.Equal(names, want) {
		t.Errorf("columns %q, want %q", names, want)
	}
}
