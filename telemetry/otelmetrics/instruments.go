package otelmetrics

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// kind is how an instrument is fed.
type kind uint8

const (
	// counter is a synchronous Float64Counter, added to on the call path.
	counter kind = iota
	// upDown is a synchronous Float64UpDownCounter (a gauge moved up and down by events).
	upDown
	// histogram is a synchronous Float64Histogram of seconds.
	histogram
	// gauge is a Float64ObservableGauge, read at collection time.
	gauge
	// total is a Float64ObservableCounter, read at collection time: a count the
	// adapter or a source keeps, reported whole.
	total
)

// id names a row of the instrument table.
type id uint8

// The instruments, one row each in the table below.
const (
	instCalls id = iota
	instCallDuration
	instShortCircuits
	instBulkhead
	instRetryBudget
	instFailovers
	instFallbackCalls
	instAbandoned
	instAbandonedTotal

	instBreakerState
	instOpenDuration
	instOpenSeconds
	instRetryAfter
	instWindowCalls
	instWindowFailed
	instWindowSlow
	instProbesInFlight
	instTransitions
	instProbes
	instProbeResults
	instCooldownExtensions
	instJournalPending
	instJournalOldestAge
	instFallbackRatio
	instRouteServing
	instStartTime
	instSeriesOverflow
	instThrottleShare
	instThrottleShed
	instAdaptiveLimit
	instAdaptiveLimitMin
	instAdaptiveNoLoad
	instAdaptiveRefused
	instFleetSyncs
	instFleetSyncFailures
	instFleetOutages
	instFleetRedisCommands
	instFleetLocal
	instFleetSyncErrors
	numInst
)

// row is one instrument: its OpenTelemetry name, unit and description, how it is fed,
// its attribute keys (bounded labels, in order), and the name OpenTelemetry's
// Prometheus exporter gives it (a dot becomes "_", the unit "s" appends "_seconds",
// "1" on a gauge "_ratio", a counter "_total"; annotations in braces add nothing),
// which is the Prometheus telemetry's name, so the alert rules and the dashboard in
// deploy/ read either path. The tests check prom against the exporter's output.
//
// Adding an instrument is one row here (and its id above); a synchronous row is then
// fed by m.record(ctx, id, value, labels) on the path that sees the event, an
// observable one by e.emit(id, value, labels...) in a collector (collect.go), or by
// the row's own read function, called at every collection.
type row struct {
	name, unit, desc string
	kind             kind
	attrs            []attribute.Key
	prom             string
	// read, when set, reports the row's values at collection time. Rows without it
	// are reported by the collectors of collect.go.
	read func(m *Metrics, e *emitter)
}

var (
	kDependency = attribute.Key("dependency")
	kTool       = attribute.Key("tool")
	kOutcome    = attribute.Key("outcome")
	kErrorClass = attribute.Key("error_class")
	kState      = attribute.Key("state")
	kFrom       = attribute.Key("from")
	kTo         = attribute.Key("to")
	kCause      = attribute.Key("cause")
	kResult     = attribute.Key("result")
	kSource     = attribute.Key("source")
	kModel      = attribute.Key("model")
	kRegion     = attribute.Key("region")
	kMetric     = attribute.Key("metric")
	kPriority   = attribute.Key("priority")
	kError      = attribute.Key("error")

	dep = []attribute.Key{kDependency}
)

// instruments is the table. Units follow OpenTelemetry's: "s" for seconds, "1" for a
// ratio, a {annotation} for counts of things.
var instruments = [numInst]row{
	instCalls: {name: "agentbreaker.calls", unit: "{call}", kind: counter, prom: "agentbreaker_calls_total",
		desc:  "Guarded calls sent to their dependency, by classified outcome and error class.",
		attrs: []attribute.Key{kDependency, kTool, kOutcome, kErrorClass}},
	instCallDuration: {name: "agentbreaker.call.duration", unit: "s", kind: histogram, prom: "agentbreaker_call_duration_seconds",
		desc:  "Duration of guarded calls sent to their dependency, by classified outcome.",
		attrs: []attribute.Key{kDependency, kOutcome}},
	instShortCircuits: {name: "agentbreaker.short_circuits", unit: "{call}", kind: counter, prom: "agentbreaker_short_circuits_total",
		desc:  "Calls answered locally because their breaker did not admit them, by the state that rejected them.",
		attrs: []attribute.Key{kDependency, kTool, kState}},
	instBulkhead: {name: "agentbreaker.bulkhead.rejections", unit: "{call}", kind: counter, prom: "agentbreaker_bulkhead_rejections_total",
		desc: "Calls refused because the dependency's bulkhead was full.", attrs: dep},
	instRetryBudget: {name: "agentbreaker.retry_budget.exhausted", unit: "{retry}", kind: counter, prom: "agentbreaker_retry_budget_exhausted_total",
		desc: "Retries refused because the dependency's retry budget was spent.", attrs: dep},
	instFailovers: {name: "agentbreaker.model.failovers", unit: "{failover}", kind: counter, prom: "agentbreaker_model_failovers_total",
		desc:  "Model calls moved from one route (model@region) to the next, by cause.",
		attrs: []attribute.Key{kFrom, kTo, kCause}},
	instFallbackCalls: {name: "agentbreaker.model.fallback_calls", unit: "{call}", kind: counter, prom: "agentbreaker_model_fallback_calls_total",
		desc:  "Model calls answered by a route after an earlier route in the order failed or refused them, by the first route that did not serve (from), the route that answered (to) and why.",
		attrs: []attribute.Key{kFrom, kTo, kCause}},
	// The in-flight gauge and the counter of abandoned calls share their Prometheus
	// name but for "_total"; OpenTelemetry names must differ, so the counter's name
	// differs from the gauge's in its separators only (both become
	// agentbreaker_tool_calls_abandoned*).
	instAbandoned: {name: "agentbreaker.tool_calls.abandoned", unit: "{call}", kind: upDown, prom: "agentbreaker_tool_calls_abandoned",
		desc:  "Tool calls that ran past their timeout and are still running: the wrapper answered without them and their goroutine is stuck until the tool returns.",
		attrs: []attribute.Key{kTool}},
	instAbandonedTotal: {name: "agentbreaker.tool.calls.abandoned", unit: "{call}", kind: counter, prom: "agentbreaker_tool_calls_abandoned_total",
		desc:  "Tool calls abandoned after their timeout because the tool ignored its context.",
		attrs: []attribute.Key{kTool}},

	instBreakerState: {name: "agentbreaker.breaker.state", unit: "{breaker}", kind: gauge, prom: "agentbreaker_breaker_state",
		desc:  "1 for the state the breaker is in now, 0 for the other states.",
		attrs: []attribute.Key{kDependency, kState}},
	instOpenDuration: {name: "agentbreaker.breaker.open_duration", unit: "s", kind: gauge, prom: "agentbreaker_breaker_open_duration_seconds",
		desc:  "How long the breaker has been open or half-open since it last admitted calls; 0 while it admits calls or is forced open.",
		attrs: dep},
	instOpenSeconds: {name: "agentbreaker.breaker.open", unit: "s", kind: total, prom: "agentbreaker_breaker_open_seconds_total",
		desc: "Time the breaker spent open or half-open, summed since the process started.", attrs: dep},
	instRetryAfter: {name: "agentbreaker.breaker.retry_after", unit: "s", kind: gauge, prom: "agentbreaker_breaker_retry_after_seconds",
		desc: "Time until the breaker lets the next probe through; 0 when it admits calls or is forced open.", attrs: dep},
	instWindowCalls: {name: "agentbreaker.breaker.window.calls", unit: "{call}", kind: gauge, prom: "agentbreaker_breaker_window_calls",
		desc: "Calls in the breaker's rolling window.", attrs: dep},
	instWindowFailed: {name: "agentbreaker.breaker.window.failed_calls", unit: "{call}", kind: gauge, prom: "agentbreaker_breaker_window_failed_calls",
		desc: "Failed calls in the breaker's rolling window.", attrs: dep},
	instWindowSlow: {name: "agentbreaker.breaker.window.slow_calls", unit: "{call}", kind: gauge, prom: "agentbreaker_breaker_window_slow_calls",
		desc: "Slow calls in the breaker's rolling window.", attrs: dep},
	instProbesInFlight: {name: "agentbreaker.breaker.probes_in_flight", unit: "{probe}", kind: gauge, prom: "agentbreaker_breaker_probes_in_flight",
		desc: "Half-open probes admitted that have not reported yet.", attrs: dep},
	instTransitions: {name: "agentbreaker.breaker.transitions", unit: "{transition}", kind: total, prom: "agentbreaker_breaker_transitions_total",
		desc:  "Breaker state changes, by from and to state and by cause.",
		attrs: []attribute.Key{kDependency, kFrom, kTo, kCause}},
	instProbes: {name: "agentbreaker.breaker.probes", unit: "{probe}", kind: total, prom: "agentbreaker_breaker_probes_total",
		desc:  "Half-open probe rounds by result: succeeded (the breaker closed), failed (it reopened) or expired (the probe never reported).",
		attrs: []attribute.Key{kDependency, kResult}},
	instProbeResults: {name: "agentbreaker.breaker.probe_results", unit: "{probe}", kind: total, prom: "agentbreaker_breaker_probe_results_total",
		desc:  "Half-open probe rounds that settled, by source (health_probe, user_call) and result (succeeded, failed).",
		attrs: []attribute.Key{kDependency, kSource, kResult}},
	instCooldownExtensions: {name: "agentbreaker.breaker.cooldown_extensions", unit: "{extension}", kind: total, prom: "agentbreaker_breaker_cooldown_extensions_total",
		desc: "Times an open breaker's reopen time moved later because the dependency asked for a longer pause (Retry-After, RetryInfo).", attrs: dep},
	instJournalPending: {name: "agentbreaker.journal.pending_intents", unit: "{intent}", kind: gauge, prom: "agentbreaker_journal_pending_intents",
		desc: "Journal intents whose outcome is unknown and that await reconciliation."},
	instJournalOldestAge: {name: "agentbreaker.journal.oldest_pending_age", unit: "s", kind: gauge, prom: "agentbreaker_journal_oldest_pending_age_seconds",
		desc: "Age of the oldest journal intent awaiting reconciliation; 0 when none waits."},
	instFallbackRatio: {name: "agentbreaker.model.fallback_ratio", unit: "1", kind: gauge, prom: "agentbreaker_model_fallback_ratio",
		desc: "Share of recent turns served by a model route other than the primary one, as reported by the failover wrapper."},
	instRouteServing: {name: "agentbreaker.model.route_serving", unit: "{route}", kind: gauge, prom: "agentbreaker_model_route_serving",
		desc:  "1 for the model route serving calls now, 0 for routes that served before.",
		attrs: []attribute.Key{kModel, kRegion}},
	instStartTime: {name: "agentbreaker.start_time", unit: "s", kind: gauge, prom: "agentbreaker_start_time_seconds",
		desc: "Unix time at which the adapter was created; it changes when the process restarts, which alert rules use to tell a series born in this process from the previous one's.",
		read: func(m *Metrics, e *emitter) { e.emit(instStartTime, float64(m.started.UnixNano())/1e9) }},
	instSeriesOverflow: {name: "agentbreaker.telemetry.series_overflow", unit: "{report}", kind: total, prom: "agentbreaker_telemetry_series_overflow_total",
		desc:  "Reports folded into a series labelled \"other\" because the series budget (Config.MaxSeries) was spent, by metric family.",
		attrs: []attribute.Key{kMetric},
		read: func(m *Metrics, e *emitter) {
			for f := range numFamilies {
				e.emit(instSeriesOverflow, float64(m.budget.Folded(uint8(f))), familyNames[f])
			}
		}},
	// A share, but not named a ratio in Prometheus: no unit "1", which would append
	// "_ratio".
	instThrottleShare: {name: "agentbreaker.throttle.shed_share", unit: "", kind: gauge, prom: "agentbreaker_throttle_shed_share",
		desc: "Share of the dependency's calls its throttle is shedding now (p, the share taken from the lowest priorities first); 0 while it sheds nothing.", attrs: dep},
	instThrottleShed: {name: "agentbreaker.throttle.shed", unit: "{call}", kind: total, prom: "agentbreaker_throttle_shed_total",
		desc:  "Calls the dependency's throttle refused (never sent) while the dependency was partly overloaded, by the call's priority.",
		attrs: []attribute.Key{kDependency, kPriority}},
	instAdaptiveLimit: {name: "agentbreaker.adaptive_limit", unit: "{call}", kind: gauge, prom: "agentbreaker_adaptive_limit",
		desc: "The dependency's adaptive concurrency limit in force: how many of its calls may be in flight (the share of it each priority may fill is in docs/adaptive-concurrency.md).", attrs: dep},
	instAdaptiveLimitMin: {name: "agentbreaker.adaptive_limit.min", unit: "{call}", kind: gauge, prom: "agentbreaker_adaptive_limit_min",
		desc: "The floor of the dependency's adaptive concurrency limit (MinLimit): a limit that stays there means the dependency stays slow.", attrs: dep},
	instAdaptiveNoLoad: {name: "agentbreaker.adaptive_limit.no_load", unit: "s", kind: gauge, prom: "agentbreaker_adaptive_limit_no_load_seconds",
		desc: "The no-load latency the dependency's adaptive limit measured (0 until measured), in seconds.", attrs: dep},
	instAdaptiveRefused: {name: "agentbreaker.adaptive_limit.refused", unit: "{call}", kind: total, prom: "agentbreaker_adaptive_limit_refused_total",
		desc:  "Calls the dependency's adaptive concurrency limit refused at once (never sent, never counted as the dependency's failure), by the call's priority.",
		attrs: []attribute.Key{kDependency, kPriority}},
	instFleetSyncs: {name: "agentbreaker.fleet.syncs", unit: "{sync}", kind: total, prom: "agentbreaker_fleet_syncs_total",
		desc: "Successful fleet sync rounds with Redis (one pipelined round trip each)."},
	instFleetSyncFailures: {name: "agentbreaker.fleet.sync_failures", unit: "{sync}", kind: total, prom: "agentbreaker_fleet_sync_failures_total",
		desc: "Fleet sync rounds (or single breakers' scripts) that failed: Redis down, slow or partitioned."},
	instFleetOutages: {name: "agentbreaker.fleet.outages", unit: "{outage}", kind: total, prom: "agentbreaker_fleet_outages_total",
		desc: "Times the fleet lost Redis (the first failed sync of each outage)."},
	instFleetRedisCommands: {name: "agentbreaker.fleet.redis_commands", unit: "{command}", kind: total, prom: "agentbreaker_fleet_redis_commands_total",
		desc: "Redis commands the fleet sent (script runs and loads)."},
	instFleetLocal: {name: "agentbreaker.fleet.local", unit: "{breaker}", kind: gauge, prom: "agentbreaker_fleet_local",
		desc: "1 while a breaker attached to the fleet decides alone on this replica, 0 while it follows the fleet; for dependency=\"other\", the number of folded breakers deciding alone.", attrs: dep},
	instFleetSyncErrors: {name: "agentbreaker.fleet.sync_errors", unit: "{sync}", kind: total, prom: "agentbreaker_fleet_sync_errors_total",
		desc:  "Failed fleet syncs by the class of their error: auth, protocol, unreachable, timeout.",
		attrs: []attribute.Key{kError}},
}

// makeInstruments creates every row's instrument on meter and registers one callback
// for the observable ones.
func (m *Metrics) makeInstruments(meter metric.Meter, buckets []float64) error {
	var observables []metric.Observable
	for i := range numInst {
		r := &instruments[i]
		m.keys[i] = r.attrs
		var err error
		switch r.kind {
		case counter:
			m.counters[i], err = meter.Float64Counter(r.name, metric.WithUnit(r.unit), metric.WithDescription(r.desc))
		case upDown:
			m.upDowns[i], err = meter.Float64UpDownCounter(r.name, metric.WithUnit(r.unit), metric.WithDescription(r.desc))
		case histogram:
			m.histograms[i], err = meter.Float64Histogram(r.name, metric.WithUnit(r.unit), metric.WithDescription(r.desc),
				metric.WithExplicitBucketBoundaries(buckets...))
		case gauge:
			var g metric.Float64ObservableGauge
			g, err = meter.Float64ObservableGauge(r.name, metric.WithUnit(r.unit), metric.WithDescription(r.desc))
			m.observables[i] = g
			observables = append(observables, g)
		case total:
			var c metric.Float64ObservableCounter
			c, err = meter.Float64ObservableCounter(r.name, metric.WithUnit(r.unit), metric.WithDescription(r.desc))
			m.observables[i] = c
			observables = append(observables, c)
		}
		if err != nil {
			return fmt.Errorf("otelmetrics: creating instrument %s: %w", r.name, err)
		}
	}
	reg, err := meter.RegisterCallback(m.collect, observables...)
	if err != nil {
		return fmt.Errorf("otelmetrics: registering the collection callback: %w", err)
	}
	m.reg = reg
	return nil
}

// options are the measurement options of one series of a synchronous instrument,
// built once: recording with a cached option slice allocates nothing.
type options struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// optionCache holds the options of every series recorded so far. It grows only with
// series the budget admitted (or the fixed "other" rows), so it is bounded as the
// exported series are.
type optionCache struct {
	mu sync.RWMutex
	m  map[bound.Key]*options
}

func (c *optionCache) get(i id, labels [4]string) *options {
	k := bound.Key{Fam: uint8(i), Labels: labels}
	c.mu.RLock()
	o := c.m[k]
	c.mu.RUnlock()
	if o != nil {
		return o
	}
	keys := instruments[i].attrs
	kvs := make([]attribute.KeyValue, len(keys))
	for j, key := range keys {
		kvs[j] = key.String(labels[j])
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = &options{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}}
	c.mu.Lock()
	if prev := c.m[k]; prev != nil {
		o = prev
	} else {
		c.m[k] = o
	}
	c.mu.Unlock()
	return o
}

// record adds v to (or, for a histogram, records v in) the series of instrument i
// with these labels.
func (m *Metrics) record(ctx context.Context, i id, v float64, labels [4]string) {
	if ctx == nil {
		ctx = context.Background()
	}
	o := m.opts.get(i, labels)
	switch instruments[i].kind {
	case counter:
		m.counters[i].Add(ctx, v, o.add...)
	case upDown:
		m.upDowns[i].Add(ctx, v, o.add...)
	case histogram:
		m.histograms[i].Record(ctx, v, o.rec...)
	}
}

// emitter reports observable values during one collection.
type emitter struct {
	m   *Metrics
	o   metric.Observer
	kvs []attribute.KeyValue // reused between observations
}

// emit observes v for instrument i with these label values, in the row's attribute
// order.
func (e *emitter) emit(i id, v float64, labels ...string) {
	keys := e.m.keys[i]
	e.kvs = e.kvs[:0]
	for j, l := range labels {
		e.kvs = append(e.kvs, keys[j].String(l))
	}
	e.o.ObserveFloat64(e.m.observables[i], v, metric.WithAttributeSet(attribute.NewSet(e.kvs...)))
}
