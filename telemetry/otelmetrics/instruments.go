package otelmetrics

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
)

// instruments are the table's rows (package telemetry/internal/metrics) made on one
// meter: a synchronous instrument for each row fed on the call path, an observable
// one for each row read at collection time, all read by one callback.
type instruments struct {
	counters    [metrics.NumIDs]metric.Float64Counter
	upDowns     [metrics.NumIDs]metric.Float64UpDownCounter
	histograms  [metrics.NumIDs]metric.Float64Histogram
	observables [metrics.NumIDs]metric.Float64Observable
	keys        [metrics.NumIDs][]attribute.Key
	opts        optionCache
}

// makeInstruments creates every row's instrument on meter and registers collect as
// the callback of the observable ones.
func makeInstruments(meter metric.Meter, buckets []float64, collect metric.Callback) (*instruments, metric.Registration, error) {
	in := &instruments{opts: optionCache{m: make(map[bound.Key]*options)}}
	var observables []metric.Observable
	for i, r := range metrics.Rows {
		for _, l := range r.Labels {
			in.keys[i] = append(in.keys[i], attribute.Key(l))
		}
		unit, desc := metric.WithUnit(r.Unit), metric.WithDescription(r.Help)
		var err error
		switch r.Kind {
		case metrics.Counter:
			in.counters[i], err = meter.Float64Counter(r.Name, unit, desc)
		case metrics.UpDown:
			in.upDowns[i], err = meter.Float64UpDownCounter(r.Name, unit, desc)
		case metrics.Histogram:
			in.histograms[i], err = meter.Float64Histogram(r.Name, unit, desc, metric.WithExplicitBucketBoundaries(buckets...))
		case metrics.Gauge:
			in.observables[i], err = meter.Float64ObservableGauge(r.Name, unit, desc)
		case metrics.Total:
			in.observables[i], err = meter.Float64ObservableCounter(r.Name, unit, desc)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("otelmetrics: creating instrument %s: %w", r.Name, err)
		}
		if in.observables[i] != nil {
			observables = append(observables, in.observables[i])
		}
	}
	reg, err := meter.RegisterCallback(collect, observables...)
	if err != nil {
		return nil, nil, fmt.Errorf("otelmetrics: registering the collection callback: %w", err)
	}
	return in, reg, nil
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

func (c *optionCache) get(keys []attribute.Key, i metrics.ID, labels [4]string) *options {
	k := bound.Key{Fam: uint8(i), Labels: labels}
	c.mu.RLock()
	o := c.m[k]
	c.mu.RUnlock()
	if o != nil {
		return o
	}
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

// Record implements metrics.Recorder: it adds v to (or, for a histogram, records v
// in) the series of row i with these labels.
func (in *instruments) Record(ctx context.Context, i metrics.ID, v float64, labels [4]string) {
	if ctx == nil {
		ctx = context.Background()
	}
	o := in.opts.get(in.keys[i], i, labels)
	switch metrics.Rows[i].Kind {
	case metrics.Counter:
		in.counters[i].Add(ctx, v, o.add...)
	case metrics.UpDown:
		in.upDowns[i].Add(ctx, v, o.add...)
	case metrics.Histogram:
		in.histograms[i].Record(ctx, v, o.rec...)
	}
}

// collection is a metrics.Observer for one run of the callback.
type collection struct {
	in  *instruments
	o   metric.Observer
	kvs []attribute.KeyValue // reused between observations
}

// Observe observes v for row i with these label values, in the row's label order.
func (c *collection) Observe(i metrics.ID, v float64, labels ...string) {
	keys := c.in.keys[i]
	c.kvs = c.kvs[:0]
	for j, l := range labels {
		c.kvs = append(c.kvs, keys[j].String(l))
	}
	c.o.ObserveFloat64(c.in.observables[i], v, metric.WithAttributeSet(attribute.NewSet(c.kvs...)))
}
