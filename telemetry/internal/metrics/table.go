package metrics

// Kind is how an instrument is fed.
type Kind uint8

const (
	// Counter is added to on the call path (a CounterVec, a Float64Counter).
	Counter Kind = iota
	// UpDown is moved up and down on the call path (a GaugeVec, a Float64UpDownCounter).
	UpDown
	// Histogram records seconds on the call path.
	Histogram
	// Gauge is read at collection time.
	Gauge
	// Total is a count read whole at collection time (a counter a source keeps).
	Total
)

// ID names a row of the table.
type ID uint8

// The rows, in the order of Rows.
const (
	Calls ID = iota
	CallDuration
	ShortCircuits
	Bulkhead
	RetryBudget
	Failovers
	FallbackCalls
	Abandoned
	AbandonedTotal
	BreakerState
	OpenDuration
	OpenSeconds
	RetryAfter
	WindowCalls
	WindowFailed
	WindowSlow
	ProbesInFlight
	Transitions
	Probes
	ProbeResults
	CooldownExtensions
	PolicyInfo
	JournalPending
	JournalOldestAge
	FallbackRatio
	RouteServing
	StartTime
	SeriesOverflow
	ThrottleShare
	ThrottleShed
	AdaptiveLimit
	AdaptiveLimitMin
	AdaptiveNoLoad
	AdaptiveRefused
	FleetSyncs
	FleetSyncFailures
	FleetOutages
	FleetRedisCommands
	FleetLocal
	FleetSyncErrors
	ShadowRefusals
	NumIDs
)

// Row is one metric family: its Prometheus name, its OpenTelemetry name and unit
// (OpenTelemetry's Prometheus exporter turns Name and Unit into Prom: a dot becomes
// "_", the unit "s" appends "_seconds", "1" on a gauge "_ratio", a counter "_total";
// annotations in braces add nothing), how it is fed, its labels in order, its help
// text and when its series first appear in a scrape.
type Row struct {
	Prom, Name, Unit string
	Kind             Kind
	Labels           []string
	Help             string
	// Doc is the row's meaning on docs/operations-metrics.md, which prints its tables
	// from this one; Appears says when its series first show in a scrape.
	Doc, Appears string
	// Series is what the family costs: this many series per Per (a breaker, a
	// throttle, an adaptive limit; "" is per label set), 0 for a histogram's
	// len(DurationBuckets)+3. The series budget's costs are these sums (a test checks
	// them).
	Series int
	Per    string
}

var (
	dep      = []string{"dependency"}
	depPrio  = []string{"dependency", "priority"}
	route    = []string{"from", "to", "cause"}
	toolOnly = []string{"tool"}
)

// What a family's cost is counted per.
const (
	perB = "breaker"
	perT = "throttle"
	perL = "adaptive limit"
)

// When a family's series first appear.
const (
	atStart      = "from the first scrape"
	perBreaker   = "from the first scrape, for every watched breaker"
	perThrottle  = "from the first scrape, for every watched throttle"
	perLimit     = "from the first scrape, for every watched adaptive limit"
	perFleet     = "from the first scrape once a fleet is watched"
	onEvent      = "with its first event"
	perDep       = "from the first scrape at 0 for every watched dependency; others with their first event"
	perTool      = "from the first scrape at 0 for every tool a watched source names; others with their first event"
	onJournal    = "once the journal's backlog is reported (a wired Journal, JournalPending, WatchJournal)"
	onRatio      = "once a Failover is watched (Wire, ModelObserver) or FallbackShare is called"
	onFailover   = "once a Failover is watched (Wire, ModelObserver) or RouteServing is called"
	onProbeRound = "with the first probe of that source and result"
)

// Rows is the table: every family both exporters make, defined once. Adding a family
// is a row here and its ID above; a row fed on the call path is then recorded with
// s.rec.Record where the event is seen (events.go), one read at collection time is
// observed by a collector (collect.go, breakers.go). Both exporters make it, and
// docs/operations-metrics.md prints it (go test ./docs -update in test/).
var Rows = [NumIDs]Row{
	Calls: {Prom: "agentbreaker_calls_total", Name: "agentbreaker.calls", Unit: "{call}", Kind: Counter,
		Labels: []string{"dependency", "tool", "outcome", "error_class"}, Appears: onEvent,
		Help: "Guarded calls sent to their dependency, by classified outcome and error class.",
		Doc:  "calls sent, by classified outcome (SUCCEEDED, FAILED_BEFORE_SEND, FAILED, UNKNOWN) and class", Series: 1},
	CallDuration: {Prom: "agentbreaker_call_duration_seconds", Name: "agentbreaker.call.duration", Unit: "s", Kind: Histogram,
		Labels: []string{"dependency", "outcome"}, Appears: onEvent,
		Help: "Duration of guarded calls sent to their dependency, by classified outcome.",
		Doc:  "duration of calls sent", Series: 0},
	ShortCircuits: {Prom: "agentbreaker_short_circuits_total", Name: "agentbreaker.short_circuits", Unit: "{call}", Kind: Counter,
		Labels: []string{"dependency", "tool", "state"}, Appears: onEvent,
		Help: "Calls answered locally because their breaker did not admit them, by the state that rejected them.",
		Doc:  "calls answered locally because the breaker did not admit them", Series: 1},
	Bulkhead: {Prom: "agentbreaker_bulkhead_rejections_total", Name: "agentbreaker.bulkhead.rejections", Unit: "{call}", Kind: Counter,
		Labels: dep, Appears: perDep,
		Help: "Calls refused because the dependency's bulkhead was full.",
		Doc:  "calls refused by a full bulkhead", Series: 1},
	RetryBudget: {Prom: "agentbreaker_retry_budget_exhausted_total", Name: "agentbreaker.retry_budget.exhausted", Unit: "{retry}", Kind: Counter,
		Labels: dep, Appears: perDep,
		Help: "Retries refused because the dependency's retry budget was spent.",
		Doc:  "retries refused by a spent retry budget", Series: 1},
	Failovers: {Prom: "agentbreaker_model_failovers_total", Name: "agentbreaker.model.failovers", Unit: "{failover}", Kind: Counter,
		Labels: route, Appears: onEvent,
		Help: "Model calls moved from one route (model@region) to the next, by cause.",
		Doc:  "changes of serving route (model@region)", Series: 1},
	FallbackCalls: {Prom: "agentbreaker_model_fallback_calls_total", Name: "agentbreaker.model.fallback_calls", Unit: "{call}", Kind: Counter,
		Labels: route, Appears: onEvent,
		Help: "Model calls answered by a route after an earlier route in the order failed or refused them, by the first route that did not serve (from), the route that answered (to) and why; counted whether or not the serving route changed.",
		Doc:  "model calls answered by a later route because an earlier one failed or refused them: from is the first route that did not serve, to the route that answered; counted whether or not the serving route changed", Series: 1},
	// The gauge and the counter of abandoned calls share their Prometheus name but for
	// "_total"; OpenTelemetry names must differ, so theirs differ in a separator only.
	Abandoned: {Prom: "agentbreaker_tool_calls_abandoned", Name: "agentbreaker.tool_calls.abandoned", Unit: "{call}", Kind: UpDown,
		Labels: toolOnly, Appears: perTool,
		Help: "Tool calls that ran past their timeout and are still running: the wrapper answered without them and their goroutine is stuck until the tool returns.",
		Doc:  "tool calls still running after `tooltimeout` gave up on them (they ignore their context)", Series: 1},
	AbandonedTotal: {Prom: "agentbreaker_tool_calls_abandoned_total", Name: "agentbreaker.tool.calls.abandoned", Unit: "{call}", Kind: Counter,
		Labels: toolOnly, Appears: perTool,
		Help: "Tool calls abandoned after their timeout because the tool ignored its context.",
		Doc:  "tool calls `tooltimeout` abandoned", Series: 1},
	BreakerState: {Prom: "agentbreaker_breaker_state", Name: "agentbreaker.breaker.state", Unit: "{breaker}", Kind: Gauge,
		Labels: []string{"dependency", "state"}, Appears: perBreaker,
		Help: "1 for the state the breaker is in now, 0 for the other states.",
		Doc:  "1 for the state the breaker is in (closed, open, half_open, forced_open, forced_closed), 0 for the others; for `dependency=\"other\"`, the number of breakers folded into it in each state", Series: 5, Per: perB},
	OpenDuration: {Prom: "agentbreaker_breaker_open_duration_seconds", Name: "agentbreaker.breaker.open_duration", Unit: "s", Kind: Gauge,
		Labels: dep, Appears: perBreaker,
		Help: "How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.",
		Doc:  "how long the breaker has been open or half-open since it last admitted calls (failed probes do not restart it); 0 when admitting or forced open", Series: 1, Per: perB},
	OpenSeconds: {Prom: "agentbreaker_breaker_open_seconds_total", Name: "agentbreaker.breaker.open", Unit: "s", Kind: Total,
		Labels: dep, Appears: perBreaker,
		Help: "Time the breaker spent open or half-open, summed since the process started.",
		Doc:  "time spent open or half-open since the process started", Series: 1, Per: perB},
	RetryAfter: {Prom: "agentbreaker_breaker_retry_after_seconds", Name: "agentbreaker.breaker.retry_after", Unit: "s", Kind: Gauge,
		Labels: dep, Appears: perBreaker,
		Help: "Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.",
		Doc:  "time until the next probe may go", Series: 1, Per: perB},
	WindowCalls: {Prom: "agentbreaker_breaker_window_calls", Name: "agentbreaker.breaker.window.calls", Unit: "{call}", Kind: Gauge,
		Labels: dep, Appears: perBreaker, Help: "Calls in the breaker's rolling window.",
		Doc: "calls in the rolling window", Series: 1, Per: perB},
	WindowFailed: {Prom: "agentbreaker_breaker_window_failed_calls", Name: "agentbreaker.breaker.window.failed_calls", Unit: "{call}", Kind: Gauge,
		Labels: dep, Appears: perBreaker, Help: "Failed calls in the breaker's rolling window.",
		Doc: "failed calls in the rolling window", Series: 1, Per: perB},
	WindowSlow: {Prom: "agentbreaker_breaker_window_slow_calls", Name: "agentbreaker.breaker.window.slow_calls", Unit: "{call}", Kind: Gauge,
		Labels: dep, Appears: perBreaker, Help: "Slow calls in the breaker's rolling window.",
		Doc: "slow calls in the rolling window", Series: 1, Per: perB},
	ProbesInFlight: {Prom: "agentbreaker_breaker_probes_in_flight", Name: "agentbreaker.breaker.probes_in_flight", Unit: "{probe}", Kind: Gauge,
		Labels: dep, Appears: perBreaker, Help: "Half-open probes admitted that have not reported yet.",
		Doc: "half-open probes that have not reported", Series: 1, Per: perB},
	Transitions: {Prom: "agentbreaker_breaker_transitions_total", Name: "agentbreaker.breaker.transitions", Unit: "{transition}", Kind: Total,
		Labels: []string{"dependency", "from", "to", "cause"}, Appears: perBreaker + " (the automatic ones; others with their first event)",
		Help: "Breaker state changes, by from and to state and by cause.",
		Doc:  "state changes", Series: 5, Per: perB},
	Probes: {Prom: "agentbreaker_breaker_probes_total", Name: "agentbreaker.breaker.probes", Unit: "{probe}", Kind: Total,
		Labels: []string{"dependency", "result"}, Appears: perBreaker,
		Help: "Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).",
		Doc:  "probe rounds: succeeded (closed the breaker), failed (reopened it), expired (never reported)", Series: 3, Per: perB},
	ProbeResults: {Prom: "agentbreaker_breaker_probe_results_total", Name: "agentbreaker.breaker.probe_results", Unit: "{probe}", Kind: Total,
		Labels: []string{"dependency", "source", "result"}, Appears: onProbeRound,
		Help: "Half-open probe rounds that settled, by source (health_probe: the dependency's own probe; user_call: a user's call) and result (succeeded, failed). A series appears with its first probe of that source and result.",
		Doc:  "the same probe results by who probed: `health_probe` (the dependency's own health probe, package probe) or `user_call` (a user's call was the probe)", Series: 1},
	CooldownExtensions: {Prom: "agentbreaker_breaker_cooldown_extensions_total", Name: "agentbreaker.breaker.cooldown_extensions", Unit: "{extension}", Kind: Total,
		Labels: dep, Appears: perBreaker,
		Help: "Times an open breaker's reopen time moved later because the dependency asked for a longer pause (Retry-After, RetryInfo).",
		Doc:  "reopen time moved later by Retry-After / RetryInfo (not a transition)", Series: 1, Per: perB},
	PolicyInfo: {Prom: "agentbreaker_policy_info", Name: "agentbreaker.policy.info", Unit: "{policy}", Kind: Gauge,
		Labels: []string{"dependency", "version"}, Appears: perBreaker,
		Help: "1, labelled with the policy version the breaker runs now (breaker.Policy.Version); the series of the previous version goes when the policy changes.",
		Doc:  "1 with the policy version in force as `version`; a live policy change (Map.Apply, depfile.Watch, the admin API) replaces the series; for `other`, the folded breakers' version or `mixed`", Series: 1, Per: perB},
	JournalPending: {Prom: "agentbreaker_journal_pending_intents", Name: "agentbreaker.journal.pending_intents", Unit: "{intent}", Kind: Gauge,
		Appears: onJournal, Help: "Journal intents whose outcome is unknown and that await reconciliation.",
		Doc: "journal intents awaiting reconciliation", Series: 1},
	JournalOldestAge: {Prom: "agentbreaker_journal_oldest_pending_age_seconds", Name: "agentbreaker.journal.oldest_pending_age", Unit: "s", Kind: Gauge,
		Appears: onJournal, Help: "Age of the oldest journal intent awaiting reconciliation; 0 when none waits.",
		Doc: "age of the oldest pending intent, computed at scrape time", Series: 1},
	FallbackRatio: {Prom: "agentbreaker_model_fallback_ratio", Name: "agentbreaker.model.fallback_ratio", Unit: "1", Kind: Gauge,
		Appears: onRatio,
		Help:    "Share of recent turns served by a model route other than the primary one, as reported by the failover wrapper.",
		Doc:     "share of recent turns served by a fallback route", Series: 1},
	RouteServing: {Prom: "agentbreaker_model_route_serving", Name: "agentbreaker.model.route_serving", Unit: "{route}", Kind: Gauge,
		Labels: []string{"model", "region"}, Appears: onFailover,
		Help: "1 for the model route serving calls now, 0 for routes that served before.",
		Doc:  "1 for the route serving now, 0 for routes that served before", Series: 1},
	StartTime: {Prom: "agentbreaker_start_time_seconds", Name: "agentbreaker.start_time", Unit: "s", Kind: Gauge,
		Appears: atStart,
		Help:    "Unix time at which the telemetry was created; it changes when the process restarts, which alert rules use to tell a series born in this process from the previous one's.",
		Doc:     "Unix time the telemetry was created; changes at a restart (the failover alert uses it)", Series: 1},
	SeriesOverflow: {Prom: "agentbreaker_telemetry_series_overflow_total", Name: "agentbreaker.telemetry.series_overflow", Unit: "{report}", Kind: Total,
		Labels: []string{"metric"}, Appears: atStart,
		Help: "Reports folded into a series labelled \"other\" because the telemetry's series budget (Config.MaxSeries) was spent, by metric family.",
		Doc:  "reports folded into a series labelled `other` because the series budget was spent, by metric family", Series: 1},
	// A share, but not named a ratio in Prometheus: no unit "1", which would append
	// "_ratio".
	ThrottleShare: {Prom: "agentbreaker_throttle_shed_share", Name: "agentbreaker.throttle.shed_share", Kind: Gauge,
		Labels: dep, Appears: perThrottle,
		Help: "Share of the dependency's calls its throttle is shedding now (p, the share taken from the lowest priorities first); 0 while it sheds nothing.",
		Doc:  "share of the dependency's calls its throttle sheds now (p); 0 while it sheds nothing; for `other`, the highest share among the throttles folded into it", Series: 1, Per: perT},
	ThrottleShed: {Prom: "agentbreaker_throttle_shed_total", Name: "agentbreaker.throttle.shed", Unit: "{call}", Kind: Total,
		Labels: depPrio, Appears: perThrottle,
		Help: "Calls the dependency's throttle refused (never sent) while the dependency was partly overloaded, by the call's priority.",
		Doc:  "calls the throttle refused (never sent), by priority (low, normal, high, critical)", Series: 4, Per: perT},
	AdaptiveLimit: {Prom: "agentbreaker_adaptive_limit", Name: "agentbreaker.adaptive_limit", Unit: "{call}", Kind: Gauge,
		Labels: dep, Appears: perLimit,
		Help: "The dependency's adaptive concurrency limit in force: how many of its calls may be in flight (the share of it each priority may fill is in docs/adaptive-concurrency.md).",
		Doc:  "the dependency's adaptive concurrency limit in force (model endpoints under their `model@region` key); for `other`, the lowest among the limits folded into it", Series: 1, Per: perL},
	AdaptiveLimitMin: {Prom: "agentbreaker_adaptive_limit_min", Name: "agentbreaker.adaptive_limit.min", Unit: "{call}", Kind: Gauge,
		Labels: dep, Appears: perLimit,
		Help: "The floor of the dependency's adaptive concurrency limit (MinLimit): a limit that stays there means the dependency stays slow.",
		Doc:  "its floor (`MinLimit`); the limit at its floor for 10 minutes fires `AgentbreakerAdaptiveLimitAtFloor`", Series: 1, Per: perL},
	AdaptiveNoLoad: {Prom: "agentbreaker_adaptive_limit_no_load_seconds", Name: "agentbreaker.adaptive_limit.no_load", Unit: "s", Kind: Gauge,
		Labels: dep, Appears: perLimit,
		Help: "The no-load latency the dependency's adaptive limit measured (0 until measured), in seconds.",
		Doc:  "the no-load latency the limit measured, 0 until measured; for `other`, the highest", Series: 1, Per: perL},
	AdaptiveRefused: {Prom: "agentbreaker_adaptive_limit_refused_total", Name: "agentbreaker.adaptive_limit.refused", Unit: "{call}", Kind: Total,
		Labels: depPrio, Appears: perLimit,
		Help: "Calls the dependency's adaptive concurrency limit refused at once (never sent, never counted as the dependency's failure), by the call's priority.",
		Doc:  "calls over the limit, answered busy at once (never sent, never the dependency's failure), by priority", Series: 4, Per: perL},
	FleetSyncs: {Prom: "agentbreaker_fleet_syncs_total", Name: "agentbreaker.fleet.syncs", Unit: "{sync}", Kind: Total,
		Appears: perFleet, Help: "Successful fleet sync rounds with Redis (one pipelined round trip each).",
		Doc: "fleet mode: successful sync rounds with Redis (one pipelined round trip each)", Series: 1},
	FleetSyncFailures: {Prom: "agentbreaker_fleet_sync_failures_total", Name: "agentbreaker.fleet.sync_failures", Unit: "{sync}", Kind: Total,
		Appears: perFleet, Help: "Fleet sync rounds (or single breakers' scripts) that failed: Redis down, slow or partitioned.",
		Doc: "fleet mode: sync rounds (or single breakers' scripts) that failed: Redis down, slow or partitioned", Series: 1},
	FleetOutages: {Prom: "agentbreaker_fleet_outages_total", Name: "agentbreaker.fleet.outages", Unit: "{outage}", Kind: Total,
		Appears: perFleet, Help: "Times the fleet lost Redis (the first failed sync of each outage): during an outage the replica's breakers decide alone after LocalAfter.",
		Doc: "fleet mode: times the fleet lost Redis (the first failed sync of each outage)", Series: 1},
	FleetRedisCommands: {Prom: "agentbreaker_fleet_redis_commands_total", Name: "agentbreaker.fleet.redis_commands", Unit: "{command}", Kind: Total,
		Appears: perFleet, Help: "Redis commands the fleet sent (script runs and loads).",
		Doc: "fleet mode: Redis commands sent (script runs and loads); flat per second whatever the call rate", Series: 1},
	FleetLocal: {Prom: "agentbreaker_fleet_local", Name: "agentbreaker.fleet.local", Unit: "{breaker}", Kind: Gauge,
		Labels: dep, Appears: perFleet + ", for every breaker it attached",
		Help: "1 while a breaker attached to the fleet decides alone on this replica (Redis unreachable, or not synced yet), 0 while it follows the fleet; for dependency=\"other\", the number of folded breakers deciding alone.",
		Doc:  "fleet mode: 1 while the breaker decides alone on this replica (Redis unreachable, or not synced yet), 0 while it follows the fleet; only breakers the fleet attached; for `dependency=\"other\"`, the number of folded breakers deciding alone", Series: 1, Per: "attached breaker"},
	FleetSyncErrors: {Prom: "agentbreaker_fleet_sync_errors_total", Name: "agentbreaker.fleet.sync_errors", Unit: "{sync}", Kind: Total,
		Labels: []string{"error"}, Appears: perFleet + " (every class at 0)",
		Help: "Failed fleet syncs by the class of their error: auth (credentials refused: check the password and ACL user), protocol (the server at the address is not a Redis that runs scripts), unreachable (no connection, or no master for the key), timeout (no answer within OpTimeout). They sum to agentbreaker_fleet_sync_failures_total.",
		Doc:  "fleet mode: failed syncs by error class: `auth` (password or ACL user refused), `protocol` (the server is not a Redis that runs scripts), `unreachable` (no connection, or no master for the key), `timeout`; they sum to `agentbreaker_fleet_sync_failures_total`", Series: 1},
	ShadowRefusals: {Prom: "agentbreaker_shadow_refusals_total", Name: "agentbreaker.shadow.refusals", Unit: "{call}", Kind: Counter,
		Labels: []string{"dependency", "control"}, Appears: onEvent,
		Help: "Calls that a control of a dependency in shadow mode would have refused (control: hold, breaker, throttle, limit, bulkhead, retry); each was sent.",
		Doc:  "shadow mode: calls a control would have refused, by control (`hold`, `breaker`, `throttle`, `limit`, `bulkhead`, `retry`); each was sent", Series: 1},
}
