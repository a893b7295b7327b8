package telemetry_test

// The exposition expected at the three moments of TestRunnerIncidentExposition. Every
// call took 250ms on the fake clock, so the duration histogram is exact too. A 503 the
// tool reports in-band is an answer the dependency gave: outcome FAILED, not UNKNOWN.

// runnerClosedText: two healthy calls.
const runnerClosedText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="billing",state="closed"} 1
agentbreaker_breaker_state{dependency="billing",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="billing",state="forced_open"} 0
agentbreaker_breaker_state{dependency="billing",state="half_open"} 0
agentbreaker_breaker_state{dependency="billing",state="open"} 0
# HELP agentbreaker_breaker_transitions_total Breaker state changes, by from and to state and by cause.
# TYPE agentbreaker_breaker_transitions_total counter
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="billing",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="billing",from="closed",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="billing",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="billing",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="billing",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="billing",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="succeeded"} 0
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="billing"} 0
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="billing"} 0
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="billing"} 0
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="billing",error_class="none",outcome="SUCCEEDED",tool="get_invoice"} 2
# HELP agentbreaker_call_duration_seconds Duration of guarded calls sent to their dependency, by classified outcome.
# TYPE agentbreaker_call_duration_seconds histogram
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="1"} 2
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="+Inf"} 2
agentbreaker_call_duration_seconds_sum{dependency="billing",outcome="SUCCEEDED"} 0.5
agentbreaker_call_duration_seconds_count{dependency="billing",outcome="SUCCEEDED"} 2
`

// runnerOpenText: tripped by two 503s of four calls, twenty seconds ago; two calls
// short-circuited since.
const runnerOpenText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="billing",state="closed"} 0
agentbreaker_breaker_state{dependency="billing",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="billing",state="forced_open"} 0
agentbreaker_breaker_state{dependency="billing",state="half_open"} 0
agentbreaker_breaker_state{dependency="billing",state="open"} 1
# HELP agentbreaker_breaker_transitions_total Breaker state changes, by from and to state and by cause.
# TYPE agentbreaker_breaker_transitions_total counter
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="billing",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="billing",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="billing",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="billing",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="billing",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="billing",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="succeeded"} 0
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="billing"} 20
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="billing"} 20
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="billing"} 10
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="billing",error_class="http_5xx",outcome="FAILED",tool="get_invoice"} 2
agentbreaker_calls_total{dependency="billing",error_class="none",outcome="SUCCEEDED",tool="get_invoice"} 2
# HELP agentbreaker_call_duration_seconds Duration of guarded calls sent to their dependency, by classified outcome.
# TYPE agentbreaker_call_duration_seconds histogram
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="1"} 2
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="+Inf"} 2
agentbreaker_call_duration_seconds_sum{dependency="billing",outcome="SUCCEEDED"} 0.5
agentbreaker_call_duration_seconds_count{dependency="billing",outcome="SUCCEEDED"} 2
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="1"} 2
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="+Inf"} 2
agentbreaker_call_duration_seconds_sum{dependency="billing",outcome="FAILED"} 0.5
agentbreaker_call_duration_seconds_count{dependency="billing",outcome="FAILED"} 2
# HELP agentbreaker_short_circuits_total Calls answered locally because their breaker did not admit them, by the state that rejected them.
# TYPE agentbreaker_short_circuits_total counter
agentbreaker_short_circuits_total{dependency="billing",state="open",tool="get_invoice"} 2
`

// runnerRecoveredText: the probe succeeded 35.25 seconds after the trip; one more call
// went through.
const runnerRecoveredText = `
# HELP agentbreaker_breaker_state 1 for the state the breaker is in now, 0 for the other states.
# TYPE agentbreaker_breaker_state gauge
agentbreaker_breaker_state{dependency="billing",state="closed"} 1
agentbreaker_breaker_state{dependency="billing",state="forced_closed"} 0
agentbreaker_breaker_state{dependency="billing",state="forced_open"} 0
agentbreaker_breaker_state{dependency="billing",state="half_open"} 0
agentbreaker_breaker_state{dependency="billing",state="open"} 0
# HELP agentbreaker_breaker_transitions_total Breaker state changes, by from and to state and by cause.
# TYPE agentbreaker_breaker_transitions_total counter
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="billing",from="open",to="half_open"} 1
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="billing",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="billing",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="billing",from="half_open",to="closed"} 1
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="billing",from="closed",to="open"} 0
# HELP agentbreaker_breaker_probes_total Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).
# TYPE agentbreaker_breaker_probes_total counter
agentbreaker_breaker_probes_total{dependency="billing",result="expired"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="failed"} 0
agentbreaker_breaker_probes_total{dependency="billing",result="succeeded"} 1
# HELP agentbreaker_breaker_open_seconds_total Time the breaker spent open or half-open, summed since the process started.
# TYPE agentbreaker_breaker_open_seconds_total counter
agentbreaker_breaker_open_seconds_total{dependency="billing"} 35.25
# HELP agentbreaker_breaker_open_duration_seconds How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.
# TYPE agentbreaker_breaker_open_duration_seconds gauge
agentbreaker_breaker_open_duration_seconds{dependency="billing"} 0
# HELP agentbreaker_breaker_retry_after_seconds Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.
# TYPE agentbreaker_breaker_retry_after_seconds gauge
agentbreaker_breaker_retry_after_seconds{dependency="billing"} 0
# HELP agentbreaker_calls_total Guarded calls sent to their dependency, by classified outcome and error class.
# TYPE agentbreaker_calls_total counter
agentbreaker_calls_total{dependency="billing",error_class="http_5xx",outcome="FAILED",tool="get_invoice"} 2
agentbreaker_calls_total{dependency="billing",error_class="none",outcome="SUCCEEDED",tool="get_invoice"} 4
# HELP agentbreaker_call_duration_seconds Duration of guarded calls sent to their dependency, by classified outcome.
# TYPE agentbreaker_call_duration_seconds histogram
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="1"} 4
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="SUCCEEDED",le="+Inf"} 4
agentbreaker_call_duration_seconds_sum{dependency="billing",outcome="SUCCEEDED"} 1
agentbreaker_call_duration_seconds_count{dependency="billing",outcome="SUCCEEDED"} 4
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="0.1"} 0
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="1"} 2
agentbreaker_call_duration_seconds_bucket{dependency="billing",outcome="FAILED",le="+Inf"} 2
agentbreaker_call_duration_seconds_sum{dependency="billing",outcome="FAILED"} 0.5
agentbreaker_call_duration_seconds_count{dependency="billing",outcome="FAILED"} 2
# HELP agentbreaker_short_circuits_total Calls answered locally because their breaker did not admit them, by the state that rejected them.
# TYPE agentbreaker_short_circuits_total counter
agentbreaker_short_circuits_total{dependency="billing",state="open",tool="get_invoice"} 2
`
