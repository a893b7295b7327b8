package otelmetrics

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// ScopeName is the instrumentation scope of the meter the instruments are made on.
const ScopeName = "github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"

// Metrics reports what agentbreaker sees as OpenTelemetry instruments on a
// caller-supplied [metric.MeterProvider]: the measurements of the Prometheus telemetry
// (package telemetry), named so that OpenTelemetry's Prometheus exporter gives them
// the Prometheus names, under the same label caps and series budget. It implements
// observe.Observer and observe.Spans, and is given where a *telemetry.Telemetry would
// be (callbacks, modelfailover through ModelObserver, tooltimeout.Config.OnAbandon,
// the breakers' OnStateChange, the journal watcher).
//
// It is safe for concurrent use: its methods are called from every goroutine that runs
// a guarded call, and collections run concurrently with them. Counting a call costs
// one read-locked lookup per label and no allocation once its series has been
// recorded. Every method is a no-op on a nil *Metrics.
type Metrics struct {
	s   *metrics.State
	in  *instruments
	reg metric.Registration
}

var (
	_ observe.Observer = (*Metrics)(nil)
	_ observe.Spans    = (*Metrics)(nil)
)

// New creates the instruments on cfg.MeterProvider's meter (named ScopeName) and
// registers their collection callback. It returns a *ConfigError for an invalid field,
// or the meter's error.
func New(cfg Config) (*Metrics, error) {
	mc, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	m := &Metrics{}
	collect := func(_ context.Context, o metric.Observer) error {
		m.s.Collect(&collection{in: m.in, o: o, kvs: make([]attribute.KeyValue, 0, 4)})
		return nil
	}
	m.in, m.reg, err = makeInstruments(cfg.MeterProvider.Meter(ScopeName), mc.DurationBuckets, collect)
	if err != nil {
		return nil, err
	}
	m.s = metrics.New(mc, m.in)
	if cfg.Breakers != nil {
		m.Watch(cfg.Breakers)
	}
	if cfg.Throttles != nil {
		m.WatchThrottles(cfg.Throttles)
	}
	if cfg.Limits != nil {
		m.WatchLimits(cfg.Limits)
	}
	if cfg.Fleet != nil {
		m.WatchFleet(cfg.Fleet)
	}
	return m, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Metrics { return metrics.Must(New(cfg)) }

// Close unregisters the collection callback: the observable instruments report
// nothing more. The synchronous ones keep what they counted.
func (m *Metrics) Close() error {
	if m == nil || m.reg == nil {
		return nil
	}
	return m.reg.Unregister()
}

// Watch adds a source of breakers read at every collection. A breaker whose name an
// earlier source already listed is skipped. It is safe to call at any time.
func (m *Metrics) Watch(src BreakerSource) { m.state().Watch(src) }

// WatchThrottles adds a source of throttles read at every collection. It is safe to
// call at any time.
func (m *Metrics) WatchThrottles(src ThrottleSource) { m.state().WatchThrottles(src) }

// WatchLimits adds a source of adaptive concurrency limits read at every collection.
// A limit whose name an earlier source already listed is skipped. It is safe to call
// at any time.
func (m *Metrics) WatchLimits(src LimitSource) { m.state().WatchLimits(src) }

// WatchFleet reads src at every collection; a later call replaces it, nil stops the
// fleet instruments.
func (m *Metrics) WatchFleet(src FleetSource) { m.state().WatchFleet(src) }

// state is the exporter-neutral state, nil for a nil *Metrics (its methods are no-ops
// on nil).
func (m *Metrics) state() *metrics.State {
	if m == nil {
		return nil
	}
	return m.s
}
