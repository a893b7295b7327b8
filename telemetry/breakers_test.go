package telemetry_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// TestRetryAfterExtensionIsNotATransition: a 429 on an open breaker moves its reopen
// time later; that is counted apart, so it cannot look like flapping.
func TestRetryAfterExtensionIsNotATransition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.tel.BreakerEvent(breaker.Event{Breaker: "llm", From: breaker.Closed, To: breaker.Open, Cause: breaker.CauseFailureRate, At: start})
	f.tel.BreakerEvent(breaker.Event{Breaker: "llm", From: breaker.Open, To: breaker.Open, Cause: breaker.CauseRetryAfter, At: start.Add(time.Second)})
	f.tel.BreakerEvent(breaker.Event{Breaker: "llm", From: breaker.Open, To: breaker.ForcedOpen, Cause: breaker.CauseOperator, At: start.Add(4 * time.Second)})
	f.clock.Advance(time.Minute)
	f.compare(t, `
# HELP agentbreaker_breaker_cooldown_extensions_total Times an open breaker's reopen time moved later because the dependency asked for a longer pause (Retry-After, RetryInfo).
# TYPE agentbreaker_breaker_cooldown_extensions_total counter
agentbreaker_breaker_cooldown_extensions_total{dependency="llm"} 1
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="llm"} 4
`+transitionsHelp+`
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="llm",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="llm",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="operator",dependency="llm",from="open",to="forced_open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="llm",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="llm",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="llm",from="closed",to="open"} 0
`, "agentbreaker_breaker_cooldown_extensions_total", "agentbreaker_breaker_open_seconds_total", "agentbreaker_breaker_transitions_total")
	moved := f.logs.withMsg(t, "agentbreaker: breaker reopen time moved later")
	require.Len(t, moved, 1)
	require.Equal(t, "retry_after", moved[0]["cause"])
}

// TestOpenDurationWhenTheListenerCameLate: a breaker already open when the telemetry
// started watching still shows how long it has been open, from its snapshot.
func TestOpenDurationWhenTheListenerCameLate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock:        f.clock,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Policy: breaker.Policy{MinimumCalls: 1, Cooldown: time.Hour, MaxCooldown: time.Hour, Jitter: -1}}},
	})
	b, _ := deps.Get("crm")
	// Not at the breaker's first instant: breaker.Snapshot reports OpenedAt as zero for
	// a breaker that opened at the very time it was created (its "never" sentinel).
	f.clock.Advance(time.Second)
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, breaker.Open, b.State())
	f.clock.Advance(12 * time.Minute)
	f.tel.Watch(deps)
	f.compare(t, `
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 720
`, "agentbreaker_breaker_open_duration_seconds")
}

// TestOpenStretchSpansFailedProbes: an outage where every probe fails is one long
// stretch, not a series of 30-second ones, so "open longer than" alerts can fire.
func TestOpenStretchSpansFailedProbes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: f.clock,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1,
			CooldownMultiplier: 1}}}, // fixed 30-second periods (tools now back off by default)
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent},
	})
	f.tel.Watch(deps)
	b, _ := deps.Get("crm")
	fail := func() {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	fail() // trips
	for range 10 {
		f.clock.Advance(31 * time.Second)
		fail() // the probe fails and the breaker reopens
	}
	f.clock.Advance(5 * time.Second)
	require.Equal(t, breaker.Open, b.State())
	f.compare(t, `
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 315
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="crm",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="failed"} 10
agentbreaker_breaker_probes_total{dependency="crm",result="succeeded"} 0
`, "agentbreaker_breaker_open_duration_seconds", "agentbreaker_breaker_probes_total")
}

// TestForcedOpenIsNotAnOutage: time forced open by an operator does not count as open,
// so an intentional isolation does not page.
func TestForcedOpenIsNotAnOutage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock:         f.clock,
		Dependencies:  map[string]dependencymap.Dependency{"crm": {}},
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent},
	})
	f.tel.Watch(deps)
	b, _ := deps.Get("crm")
	b.ForceOpen("maintenance")
	f.clock.Advance(time.Hour)
	f.compare(t, `
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 0
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="crm",state="closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_open"} 1
agentbreaker_breaker_state{dependency="crm",state="half_open"} 0
agentbreaker_breaker_state{dependency="crm",state="open"} 0
`, "agentbreaker_breaker_open_duration_seconds", "agentbreaker_breaker_state")
	warn := f.logs.withMsg(t, "agentbreaker: breaker state changed")
	require.Len(t, warn, 1)
	require.Equal(t, "WARN", warn[0]["level"])
	require.Equal(t, "forced open by operator: maintenance", warn[0]["reason"])
}

// TestBreakersListedTwiceAreCollectedOnce: two sources naming the same breaker must not
// make the scrape fail with duplicate series.
func TestBreakersListedTwiceAreCollectedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"crm": {}}})
	f.tel.Watch(deps)
	f.tel.Watch(deps)
	n, err := testutil.GatherAndCount(f.reg, "agentbreaker_breaker_state")
	require.NoError(t, err)
	require.Equal(t, 5, n)
}
