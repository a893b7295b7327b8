// Package telemetry turns what agentbreaker sees into Prometheus metrics, log/slog
// records and OpenTelemetry span attributes and events.
//
// It is the only agentbreaker package that imports Prometheus. The core packages report
// through the small interfaces of package observe; a [*Telemetry] implements all of
// them and registers its collectors on the [prometheus.Registerer] the caller gives it,
// never on the global registry.
//
// # Wiring
//
// Build what the agent uses, then hand it to the telemetry in one call, [Telemetry.Wire]:
//
//	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: logger})
//	deps := dependencymap.MustNew(dependencymap.Config{ /* ... */ })
//	failover := modelfailover.MustNew(modelfailover.Config{Breakers: deps, Routes: routes})
//	r := retry.MustNew(retry.Config{Journal: j.ForRetry()})
//	tel.Wire(telemetry.Parts{Dependencies: deps, Failover: failover, Journal: j, Retrier: r})
//
// Every family of every part given is exported and nothing for the parts left out:
// the map's breakers, transitions, throttles and adaptive limits (read from the map at
// every scrape, so keys it adds later report too), the failover's counts and gauges,
// the fleet, the journal's backlog (read at every scrape) and the operations the
// retrier's budget stopped. Then hand tel to the packages that take an
// observe.Observer; for the tool callbacks:
//
//	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: tel}})
//
// Give the breakers, the callbacks and the telemetry the same clock.
//
// The per-part calls Wire makes for you stay available, and Wire beside them counts
// every event once: dependencymap.Config.OnStateChange given [Telemetry.BreakerEvent],
// [Telemetry.Watch], [Telemetry.WatchThrottles], [Telemetry.WatchLimits],
// [Telemetry.WatchFleet], [Telemetry.ModelObserver] as the failover's Observer,
// [RetryHook] in retry.Config.OnAttempt and [WatchJournal] or [PollJournal].
//
// # Metrics
//
// Every name starts with agentbreaker_, counters end in _total and durations in
// _seconds. Labels are bounded: dependency, tool, model, region, outcome, error_class,
// cause, from, to, state and result. Session, invocation and function call IDs go to
// logs and spans, never to labels. The families and their help texts are those of
// package otelmetrics: both are made from one table, and docs/operations-metrics.md
// prints it, with when each family first appears. Series whose labels are known in
// advance read 0 from the first scrape, so rate() and alerts work before the first
// event: every watched breaker's, throttle's and limit's, and the bulkhead and
// retry-budget counters of every watched dependency and the abandoned-call series of
// every tool the watched map names.
//
// Names a model invents cannot grow the exposition without bound: the series whose
// labels come from names share one budget, Config.MaxSeries (default 10,000), over
// every family together (a breaker costs 22 series, a call-duration series
// len(DurationBuckets)+3, any other 1). Once it is spent, new series are reported under
// a fixed row labelled "other", each such report is counted in
// agentbreaker_telemetry_series_overflow_total{metric}, and a warning is logged once.
// Each label also keeps at most Config.MaxLabelValues distinct values of the names it is
// fed; the library's own classes are outside that cap (every classify class on
// error_class, every modelfailover.Cause on cause), and their series are charged to
// the budget like any other. The worst case is Config.SeriesBound() series:
// DefaultSeriesBound, 10,310, with the defaults. Label values are sanitised at this
// edge: invalid UTF-8 and every character a dependency key may not hold
// (redact.CheckName: controls, bidirectional overrides and isolates such as U+202E and
// U+2066, zero-width characters) become U+FFFD, and values are cut at MaxLabelLength
// bytes, so no name can make a scrape fail or show as something it is not.
//
// # Fleet mode
//
// With fleet mode (package fleet), give the *fleet.Fleet to Config.Fleet or
// [Telemetry.WatchFleet]; it is read at scrape time through [FleetSource], so this
// package does not import a Redis client:
//
//	tel.WatchFleet(f) // f is the *fleet.Fleet the watched breakers are attached to
//
// Scrapes then show its sync rounds, failed ones, Redis outages and Redis commands
// (agentbreaker_fleet_*_total) and, for every watched breaker the fleet has attached,
// agentbreaker_fleet_local{dependency}: 1 while the breaker decides alone on this
// replica (Redis unreachable, or not synced yet), 0 while it follows the fleet. Those
// rows are charged to the series budget (one series each); a fleet adds FleetSeries to
// Config.SeriesBound.
//
// Tool calls that tooltimeout abandons (the tool ignores its context and outlives its
// timeout) are reported by [Telemetry.ToolAbandoned], given as
// tooltimeout.Config.OnAbandon: a gauge of those still running, a counter, a WARN
// record and a span event.
//
// # Logs
//
// Every state transition, short-circuit, attempt, failover, bulkhead rejection and
// spent retry budget is one slog record whose keys are the Key constants of this
// package (dependency, request_id, attempt, outcome, error_class, elapsed_ms,
// breaker_state, policy_version, ...), so log queries do not break between versions.
//
// # Traces
//
// adk-go starts an "execute_tool" span around each tool call and a "generate_content"
// span around each model call, and hands the span's context to tool callbacks and to
// the model. The methods of [Telemetry] that take a context add the breaker decision
// to whatever span the context holds, as attributes (the latest decision) and as an
// event named "agentbreaker.<kind>" (every decision). As an observe.Spans, a Telemetry also
// puts on a call's span the breaker transition its admission or report caused
// ("agentbreaker.transition", with the keys of the transition's log record) and the
// call a throttle shed ("agentbreaker.shed"); the tool callbacks call it.
//
// # OpenTelemetry metrics
//
// Package telemetry/otelmetrics reports the same measurements as OpenTelemetry
// instruments on a caller's MeterProvider, with names that OpenTelemetry's Prometheus
// exporter turns into the names above, so the rules and the dashboard in deploy/ read
// either path. It does not import Prometheus, and this package does not import it.
package telemetry
