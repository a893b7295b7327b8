package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Metric names. They are part of the package's contract: dashboards and alert rules
// (deploy/) query them.
const (
	nameBreakerState         = "agentbreaker_breaker_state"
	nameOpenDuration         = "agentbreaker_breaker_open_duration_seconds"
	nameOpenSeconds          = "agentbreaker_breaker_open_seconds_total"
	nameRetryAfter           = "agentbreaker_breaker_retry_after_seconds"
	nameWindowCalls          = "agentbreaker_breaker_window_calls"
	nameWindowFailed         = "agentbreaker_breaker_window_failed_calls"
	nameWindowSlow           = "agentbreaker_breaker_window_slow_calls"
	nameProbesInFlight       = "agentbreaker_breaker_probes_in_flight"
	nameTransitions          = "agentbreaker_breaker_transitions_total"
	nameProbes               = "agentbreaker_breaker_probes_total"
	nameCooldownExtensions   = "agentbreaker_breaker_cooldown_extensions_total"
	nameProbeResults         = "agentbreaker_breaker_probe_results_total"
	nameJournalPending       = "agentbreaker_journal_pending_intents"
	nameJournalOldestAge     = "agentbreaker_journal_oldest_pending_age_seconds"
	nameFallbackRatio        = "agentbreaker_model_fallback_ratio"
	nameCalls                = "agentbreaker_calls_total"
	nameCallDuration         = "agentbreaker_call_duration_seconds"
	nameShortCircuits        = "agentbreaker_short_circuits_total"
	nameBulkheadRejections   = "agentbreaker_bulkhead_rejections_total"
	nameRetryBudgetExhausted = "agentbreaker_retry_budget_exhausted_total"
	nameModelFailovers       = "agentbreaker_model_failovers_total"
	nameRouteServing         = "agentbreaker_model_route_serving"
	nameStartTime            = "agentbreaker_start_time_seconds"
	nameSeriesOverflow       = "agentbreaker_telemetry_series_overflow_total"
	nameAbandoned            = "agentbreaker_tool_calls_abandoned"
	nameAbandonedTotal       = "agentbreaker_tool_calls_abandoned_total"
)

// Probe results, the values of the result label of agentbreaker_breaker_probes_total.
const (
	ProbeSucceeded = "succeeded"
	ProbeFailed    = "failed"
	// ProbeExpired is a probe lease that ran out before its caller reported.
	ProbeExpired = "expired"
)

// Probe sources, the values of the source label of agentbreaker_breaker_probe_results_total.
const (
	// ProbeSourceHealth is the dependency's own health probe (package probe).
	ProbeSourceHealth = "health_probe"
	// ProbeSourceUser is a user's call that was the half-open probe.
	ProbeSourceUser = "user_call"
)

var (
	dep = []string{"dependency"}

	descState = prometheus.NewDesc(nameBreakerState,
		"1 for the state the breaker is in now, 0 for the other states.",
		[]string{"dependency", "state"}, nil)
	descOpenDuration = prometheus.NewDesc(nameOpenDuration,
		"How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.",
		dep, nil)
	descOpenSeconds = prometheus.NewDesc(nameOpenSeconds,
		"Time the breaker spent open or half-open, summed since the process started.",
		dep, nil)
	descRetryAfter = prometheus.NewDesc(nameRetryAfter,
		"Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.",
		dep, nil)
	descWindowCalls = prometheus.NewDesc(nameWindowCalls,
		"Calls in the breaker's rolling window.", dep, nil)
	descWindowFailed = prometheus.NewDesc(nameWindowFailed,
		"Failed calls in the breaker's rolling window.", dep, nil)
	descWindowSlow = prometheus.NewDesc(nameWindowSlow,
		"Slow calls in the breaker's rolling window.", dep, nil)
	descProbesInFlight = prometheus.NewDesc(nameProbesInFlight,
		"Half-open probes admitted that have not reported yet.", dep, nil)
	descTransitions = prometheus.NewDesc(nameTransitions,
		"Breaker state changes, by from and to state and by cause.",
		[]string{"dependency", "from", "to", "cause"}, nil)
	descProbes = prometheus.NewDesc(nameProbes,
		"Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).",
		[]string{"dependency", "result"}, nil)
	descProbeResults = prometheus.NewDesc(nameProbeResults,
		"Half-open probe rounds that settled, by source (health_probe: the dependency's own probe; user_call: a user's call) and result (succeeded, failed). A series appears with its first probe of that source and result.",
		[]string{"dependency", "source", "result"}, nil)
	descCooldownExtensions = prometheus.NewDesc(nameCooldownExtensions,
		"Times an open breaker's reopen time moved later because the dependency asked for a longer pause (Retry-After, RetryInfo).",
		dep, nil)
	descJournalPending = prometheus.NewDesc(nameJournalPending,
		"Journal intents whose outcome is unknown and that await reconciliation.", nil, nil)
	descJournalOldestAge = prometheus.NewDesc(nameJournalOldestAge,
		"Age of the oldest journal intent awaiting reconciliation; 0 when none waits.", nil, nil)
	descFallbackRatio = prometheus.NewDesc(nameFallbackRatio,
		"Share of recent turns served by a model route other than the primary one, as reported by the failover wrapper.", nil, nil)

	descStartTime = prometheus.NewDesc(nameStartTime,
		"Unix time at which the telemetry was created; it changes when the process restarts, which alert rules use to tell a series born in this process from the previous one's.", nil, nil)

	scrapeDescs = []*prometheus.Desc{
		descState, descOpenDuration, descOpenSeconds, descRetryAfter, descWindowCalls,
		descWindowFailed, descWindowSlow, descProbesInFlight, descTransitions, descProbes, descProbeResults,
		descCooldownExtensions, descJournalPending, descJournalOldestAge, descFallbackRatio,
		descStartTime,
	}
)
