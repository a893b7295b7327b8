package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// LimitSource lists the adaptive concurrency limits whose state is read at scrape
// time. *dependencymap.Map implements it. Implementations must be safe for concurrent
// use.
type LimitSource interface {
	// Limiters returns every adaptive limit, sorted by name.
	Limiters() []*adaptivelimit.Limiter
}

const (
	nameLimit        = "agentbreaker_adaptive_limit"
	nameLimitFloor   = "agentbreaker_adaptive_limit_min"
	nameLimitNoLoad  = "agentbreaker_adaptive_limit_no_load_seconds"
	nameLimitRefused = "agentbreaker_adaptive_limit_refused_total"
)

// limitSeries is how many series one adaptive limit exports: the limit, its floor, the
// measured no-load latency and the refusals of each of the four priorities.
const limitSeries = 3 + 4

var (
	descLimit = prometheus.NewDesc(nameLimit,
		"The dependency's adaptive concurrency limit in force: how many of its calls may be in flight (the share of it each priority may fill is in docs/adaptive-concurrency.md).",
		dep, nil)
	descLimitFloor = prometheus.NewDesc(nameLimitFloor,
		"The floor of the dependency's adaptive concurrency limit (MinLimit): a limit that stays there means the dependency stays slow.",
		dep, nil)
	descLimitNoLoad = prometheus.NewDesc(nameLimitNoLoad,
		"The no-load latency the dependency's adaptive limit measured (0 until measured), in seconds.",
		dep, nil)
	descLimitRefused = prometheus.NewDesc(nameLimitRefused,
		"Calls the dependency's adaptive concurrency limit refused at once (never sent, never counted as the dependency's failure), by the call's priority.",
		[]string{"dependency", "priority"}, nil)
)

// WatchLimits adds a source of adaptive limits read at every scrape. A limit whose name
// an earlier source already listed is skipped. It is safe to call at any time.
func (t *Telemetry) WatchLimits(src LimitSource) {
	if t == nil || src == nil {
		return
	}
	t.sourceMu.Lock()
	defer t.sourceMu.Unlock()
	var next []LimitSource
	if cur := t.limitSources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	t.limitSources.Store(&next)
}

// collectLimits exports every watched limit. Limits past the series budget are folded
// into dependency="other": the lowest limit and floor among them, the highest no-load
// latency, their refusals summed.
func (t *Telemetry) collectLimits(ch chan<- prometheus.Metric) {
	srcs := t.limitSources.Load()
	if srcs == nil {
		return
	}
	seen := map[string]bool{}
	var other struct {
		limit, floor, noLoad float64
		refused              [4]uint64
		any                  bool
	}
	for _, src := range *srcs {
		for _, l := range src.Limiters() {
			raw := l.Name()
			if seen[raw] {
				continue
			}
			seen[raw] = true
			label := sanitizeLabel(raw)
			lo, _ := l.Bounds()
			limit, floor, noLoad := float64(l.Limit()), float64(lo), l.NoLoad().Seconds()
			if label == otherLabel || seen["\x00"+label] ||
				!t.budget.tryAdmit(seriesKey{fam: famLimit, labels: [4]string{label}}, limitSeries) {
				if !other.any || limit < other.limit {
					other.limit = limit
				}
				if !other.any || floor < other.floor {
					other.floor = floor
				}
				other.noLoad = max(other.noLoad, noLoad)
				other.any = true
				for i, pr := range throttle.Priorities() {
					other.refused[i] += l.Refused(pr)
				}
				continue
			}
			seen["\x00"+label] = true
			ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, limit, label)
			ch <- prometheus.MustNewConstMetric(descLimitFloor, prometheus.GaugeValue, floor, label)
			ch <- prometheus.MustNewConstMetric(descLimitNoLoad, prometheus.GaugeValue, noLoad, label)
			for _, pr := range throttle.Priorities() {
				ch <- prometheus.MustNewConstMetric(descLimitRefused, prometheus.CounterValue, float64(l.Refused(pr)), label, pr.String())
			}
		}
	}
	if other.any {
		ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, other.limit, otherLabel)
		ch <- prometheus.MustNewConstMetric(descLimitFloor, prometheus.GaugeValue, other.floor, otherLabel)
		ch <- prometheus.MustNewConstMetric(descLimitNoLoad, prometheus.GaugeValue, other.noLoad, otherLabel)
		for i, pr := range throttle.Priorities() {
			ch <- prometheus.MustNewConstMetric(descLimitRefused, prometheus.CounterValue, float64(other.refused[i]), otherLabel, pr.String())
		}
	}
}
