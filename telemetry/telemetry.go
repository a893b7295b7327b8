package telemetry

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// Telemetry adapts agentbreaker's events to Prometheus collectors, slog records and
// span annotations. It implements observe.Observer and prometheus.Collector.
//
// It is safe for concurrent use: its methods are called from every goroutine that runs
// a guarded call, and scrapes run concurrently with them. No method calls user code
// while holding a lock. Every method is a no-op on a nil *Telemetry, so a package may
// keep an optional *Telemetry without checking it.
type Telemetry struct {
	reg prometheus.Registerer
	log *slog.Logger
	s   *metrics.State
	p   *collectors
}

var (
	_ observe.Observer     = (*Telemetry)(nil)
	_ prometheus.Collector = (*Telemetry)(nil)
)

// collectors are the table's rows as Prometheus sees them: a vector for each row fed
// on the call path, a descriptor for each row read at scrape time.
type collectors struct {
	vecs  [metrics.NumIDs]prometheus.Collector
	descs [metrics.NumIDs]*prometheus.Desc
}

func newCollectors(buckets []float64) *collectors {
	p := &collectors{}
	for id, r := range metrics.Rows {
		switch r.Kind {
		case metrics.Counter:
			p.vecs[id] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: r.Prom, Help: r.Help}, r.Labels)
		case metrics.UpDown:
			p.vecs[id] = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: r.Prom, Help: r.Help}, r.Labels)
		case metrics.Histogram:
			p.vecs[id] = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: r.Prom, Help: r.Help, Buckets: buckets}, r.Labels)
		default:
			p.descs[id] = prometheus.NewDesc(r.Prom, r.Help, r.Labels, nil)
		}
	}
	return p
}

// Record implements metrics.Recorder.
func (p *collectors) Record(_ context.Context, id metrics.ID, v float64, labels [4]string) {
	lv := labels[:len(metrics.Rows[id].Labels)]
	switch vec := p.vecs[id].(type) {
	case *prometheus.CounterVec:
		vec.WithLabelValues(lv...).Add(v)
	case *prometheus.GaugeVec:
		vec.WithLabelValues(lv...).Add(v)
	case *prometheus.HistogramVec:
		vec.WithLabelValues(lv...).Observe(v)
	}
}

// scrape is a metrics.Observer writing to one Collect's channel.
type scrape struct {
	p  *collectors
	ch chan<- prometheus.Metric
}

func (s scrape) Observe(id metrics.ID, v float64, labels ...string) {
	typ := prometheus.GaugeValue
	if metrics.Rows[id].Kind == metrics.Total {
		typ = prometheus.CounterValue
	}
	s.ch <- prometheus.MustNewConstMetric(s.p.descs[id], typ, v, labels...)
}

// New builds the collectors and registers them on cfg.Registerer. It returns a
// *ConfigError for an invalid field, or the registerer's error (for example when
// another Telemetry is already registered there).
func New(cfg Config) (*Telemetry, error) {
	mc, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	p := newCollectors(mc.DurationBuckets)
	t := &Telemetry{reg: cfg.Registerer, log: mc.Logger, p: p, s: metrics.New(mc, p)}
	if cfg.Breakers != nil {
		t.Watch(cfg.Breakers)
	}
	if cfg.Fleet != nil {
		t.WatchFleet(cfg.Fleet)
	}
	if err := cfg.Registerer.Register(t); err != nil {
		return nil, err
	}
	return t, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Telemetry { return metrics.Must(New(cfg)) }

// Watch adds a source of breakers read at every scrape. A breaker whose name an earlier
// source already listed is skipped. Watch is safe to call at any time.
func (t *Telemetry) Watch(src BreakerSource) { t.state().Watch(src) }

// WatchThrottles adds a source of throttles read at every scrape. A throttle whose name
// an earlier source already listed is skipped. It is safe to call at any time.
func (t *Telemetry) WatchThrottles(src ThrottleSource) { t.state().WatchThrottles(src) }

// WatchLimits adds a source of adaptive limits read at every scrape. A limit whose name
// an earlier source already listed is skipped. It is safe to call at any time.
func (t *Telemetry) WatchLimits(src LimitSource) { t.state().WatchLimits(src) }

// WatchFleet reads src at every scrape: its counters, and the scope of every watched
// breaker it has attached. A later call replaces the source; nil stops the fleet
// metrics. It is safe to call at any time. Config.Fleet does the same at construction.
func (t *Telemetry) WatchFleet(src FleetSource) { t.state().WatchFleet(src) }

// Unregister removes the collectors from the registerer they were registered on, so a
// process can replace its Telemetry. It reports whether they were registered.
func (t *Telemetry) Unregister() bool {
	if t == nil {
		return false
	}
	return t.reg.Unregister(t)
}

// Describe implements prometheus.Collector.
func (t *Telemetry) Describe(ch chan<- *prometheus.Desc) {
	for id, v := range t.p.vecs {
		if v != nil {
			v.Describe(ch)
		} else {
			ch <- t.p.descs[id]
		}
	}
}

// Collect implements prometheus.Collector. Breaker state is read now, from the watched
// sources. Whatever names it was fed, a scrape holds at most Config.SeriesBound()
// series and every label value is valid UTF-8 without control or format characters.
func (t *Telemetry) Collect(ch chan<- prometheus.Metric) {
	t.s.Collect(scrape{t.p, ch}) // first: it puts the series known in advance at 0
	for _, v := range t.p.vecs {
		if v != nil {
			v.Collect(ch)
		}
	}
}

// state is the exporter-neutral state, nil for a nil *Telemetry (its methods are
// no-ops on nil).
func (t *Telemetry) state() *metrics.State {
	if t == nil {
		return nil
	}
	return t.s
}
