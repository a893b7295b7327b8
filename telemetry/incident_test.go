package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// incidentMetrics are the series an operator watches during an outage.
var incidentMetrics = []string{
	"agentbreaker_breaker_state",
	"agentbreaker_breaker_open_duration_seconds",
	"agentbreaker_breaker_open_seconds_total",
	"agentbreaker_breaker_retry_after_seconds",
	"agentbreaker_breaker_window_calls",
	"agentbreaker_breaker_window_failed_calls",
	"agentbreaker_breaker_transitions_total",
	"agentbreaker_breaker_probes_total",
	"agentbreaker_calls_total",
	"agentbreaker_short_circuits_total",
}

// TestIncidentExposition drives one dependency through an outage on a fake clock (the
// dependency map and the telemetry share it) and checks what a scrape shows while the
// breaker is closed, while it is open, and after it recovered.
func TestIncidentExposition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deps, err := dependencymap.New(dependencymap.Config{
		PolicyVersion: "v7",
		Clock:         f.clock,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer"}, Policy: breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent},
	})
	require.NoError(t, err)
	f.tel.Watch(deps)
	b, err := deps.ForTool("lookup_customer")
	require.NoError(t, err)
	ctx := context.Background()

	// call runs one guarded call whose dependency answers with class c.
	call := func(c classify.Class) {
		p, err := b.Allow()
		if err != nil {
			var open *breaker.OpenError
			require.ErrorAs(t, err, &open)
			f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: open.State, RetryAfter: open.RetryAfter()})
			return
		}
		cl := classify.ForClass(c)
		verdict := map[classify.Verdict]breaker.Verdict{classify.Healthy: breaker.Success, classify.Counts: breaker.Failure, classify.Neutral: breaker.Ignore}[cl.Verdict]
		f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Outcome: cl.Outcome, Class: c, Elapsed: 200 * time.Millisecond, Probe: p.IsProbe()})
		p.Report(breaker.Report{Verdict: verdict})
	}

	// Closed: two healthy calls.
	call(classify.ClassNone)
	call(classify.ClassNone)
	f.compare(t, closedText, incidentMetrics...)

	// Open: two 503s make 2 of 4 calls failed, which trips the 50% threshold; a third
	// call is answered locally. Twenty seconds into the thirty-second cooldown:
	call(classify.ClassHTTP5xx)
	call(classify.ClassHTTP5xx)
	require.Equal(t, breaker.Open, b.State())
	f.clock.Advance(20 * time.Second)
	call(classify.ClassNone)
	f.compare(t, openText, incidentMetrics...)

	// Recovered: after the cooldown the next call is the probe; it succeeds and the
	// breaker closes, having been open for 35 seconds.
	f.clock.Advance(15 * time.Second)
	call(classify.ClassNone)
	require.Equal(t, breaker.Closed, b.State())
	f.clock.Advance(time.Minute)
	f.compare(t, recoveredText, incidentMetrics...)

	// The transitions were logged with their causes and the policy version.
	var causes []string
	for _, r := range f.logs.withMsg(t, "agentbreaker: breaker state changed") {
		require.Equal(t, "crm", r["dependency"])
		require.Equal(t, "v7", r["policy_version"])
		causes = append(causes, r["from"].(string)+">"+r["to"].(string)+":"+r["cause"].(string))
	}
	require.Equal(t, []string{"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded"}, causes)
}

const transitionsHelp = `
# HELP agentbreaker_breaker_transitions_total Breaker state changes, by from and to state and by cause.
# TYPE agentbreaker_breaker_transitions_total counter
`

const closedText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="crm",state="closed"} 1
agentbreaker_breaker_state{dependency="crm",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_open"} 0
agentbreaker_breaker_state{dependency="crm",state="half_open"} 0
agentbreaker_breaker_state{dependency="crm",state="open"} 0
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 0
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="crm"} 0
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="crm"} 0
# HELP agentbreaker_breaker_window_calls Calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_calls gauge
agentbreaker_breaker_window_calls{dependency="crm"} 2
# HELP agentbreaker_breaker_window_failed_calls Failed calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_failed_calls gauge
agentbreaker_breaker_window_failed_calls{dependency="crm"} 0
` + transitionsHelp + `
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="crm",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="crm",from="closed",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="crm",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="crm",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="crm",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="crm",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="succeeded"} 0
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="crm",error_class="none",outcome="SUCCEEDED",tool="lookup_customer"} 2
`

const openText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="crm",state="closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_open"} 0
agentbreaker_breaker_state{dependency="crm",state="half_open"} 0
agentbreaker_breaker_state{dependency="crm",state="open"} 1
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 20
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="crm"} 20
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="crm"} 10
# HELP agentbreaker_breaker_window_calls Calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_calls gauge
agentbreaker_breaker_window_calls{dependency="crm"} 4
# HELP agentbreaker_breaker_window_failed_calls Failed calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_failed_calls gauge
agentbreaker_breaker_window_failed_calls{dependency="crm"} 2
` + transitionsHelp + `
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="crm",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="crm",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="crm",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="crm",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="crm",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="crm",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="succeeded"} 0
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="crm",error_class="http_5xx",outcome="UNKNOWN",tool="lookup_customer"} 2
agentbreaker_calls_total{dependency="crm",error_class="none",outcome="SUCCEEDED",tool="lookup_customer"} 2
# HELP agentbreaker_short_circuits_total Calls answered locally because their breaker did not admit them, by the state that rejected them.
# TYPE agentbreaker_short_circuits_total counter
agentbreaker_short_circuits_total{dependency="crm",state="open",tool="lookup_customer"} 1
`

const recoveredText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="crm",state="closed"} 1
agentbreaker_breaker_state{dependency="crm",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="crm",state="forced_open"} 0
agentbreaker_breaker_state{dependency="crm",state="half_open"} 0
agentbreaker_breaker_state{dependency="crm",state="open"} 0
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="crm"} 0
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="crm"} 35
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="crm"} 0
# HELP agentbreaker_breaker_window_calls Calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_calls gauge
agentbreaker_breaker_window_calls{dependency="crm"} 0
# HELP agentbreaker_breaker_window_failed_calls Failed calls in the breaker's rolling window.
# TYPE agentbreaker_breaker_window_failed_calls gauge
agentbreaker_breaker_window_failed_calls{dependency="crm"} 0
` + transitionsHelp + `
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="crm",from="open",to="half_open"} 1
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="crm",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="crm",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="crm",from="half_open",to="closed"} 1
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="crm",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="crm",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="crm",result="succeeded"} 1
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="crm",error_class="http_5xx",outcome="UNKNOWN",tool="lookup_customer"} 2
agentbreaker_calls_total{dependency="crm",error_class="none",outcome="SUCCEEDED",tool="lookup_customer"} 3
# HELP agentbreaker_short_circuits_total Calls answered locally because their breaker did not admit them, by the state that rejected them.
# TYPE agentbreaker_short_circuits_total counter
agentbreaker_short_circuits_total{dependency="crm",state="open",tool="lookup_customer"} 1
`
