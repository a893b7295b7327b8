package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/throttle"
)

// ThrottleSource lists the throttles whose state is read at scrape time.
// *dependencymap.Map implements it. Implementations must be safe for concurrent use.
type ThrottleSource interface {
	// Throttles returns every throttle, sorted by name.
	Throttles() []*throttle.Throttle
}

const (
	nameThrottleShare = "agentbreaker_throttle_shed_share"
	nameThrottleShed  = "agentbreaker_throttle_shed_total"
)

// throttleSeries is how many series one throttle exports: the share and the shed
// counter of each of the four priorities.
const throttleSeries = 1 + 4

var (
	descThrottleShare = prometheus.NewDesc(nameThrottleShare,
		"Share of the dependency's calls its throttle is shedding now (p, the share taken from the lowest priorities first); 0 while it sheds nothing.",
		dep, nil)
	descThrottleShed = prometheus.NewDesc(nameThrottleShed,
		"Calls the dependency's throttle refused (never sent) while the dependency was partly overloaded, by the call's priority.",
		[]string{"dependency", "priority"}, nil)
)

// WatchThrottles adds a source of throttles read at every scrape. A throttle whose name
// an earlier source already listed is skipped. It is safe to call at any time.
func (t *Telemetry) WatchThrottles(src ThrottleSource) {
	if t == nil || src == nil {
		return
	}
	t.sourceMu.Lock()
	defer t.sourceMu.Unlock()
	var next []ThrottleSource
	if cur := t.throttleSources.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, src)
	t.throttleSources.Store(&next)
}

// collectThrottles exports every watched throttle. Throttles past the series budget
// are folded into dependency="other": the highest share among them, their sheds
// summed.
func (t *Telemetry) collectThrottles(ch chan<- prometheus.Metric) {
	srcs := t.throttleSources.Load()
	if srcs == nil {
		return
	}
	seen := map[string]bool{}
	var otherShare float64
	var otherShed [4]uint64
	folded := false
	for _, src := range *srcs {
		for _, th := range src.Throttles() {
			raw := th.Name()
			if seen[raw] {
				continue
			}
			seen[raw] = true
			label := sanitizeLabel(raw)
			p := th.Probability()
			if label == otherLabel || seen["\x00"+label] ||
				!t.budget.tryAdmit(seriesKey{fam: famThrottle, labels: [4]string{label}}, throttleSeries) {
				folded = true
				otherShare = max(otherShare, p)
				for i, pr := range throttle.Priorities() {
					otherShed[i] += th.Shed(pr)
				}
				continue
			}
			seen["\x00"+label] = true
			ch <- prometheus.MustNewConstMetric(descThrottleShare, prometheus.GaugeValue, p, label)
			for _, pr := range throttle.Priorities() {
				ch <- prometheus.MustNewConstMetric(descThrottleShed, prometheus.CounterValue, float64(th.Shed(pr)), label, pr.String())
			}
		}
	}
	if folded {
		ch <- prometheus.MustNewConstMetric(descThrottleShare, prometheus.GaugeValue, otherShare, otherLabel)
		for i, pr := range throttle.Priorities() {
			ch <- prometheus.MustNewConstMetric(descThrottleShed, prometheus.CounterValue, float64(otherShed[i]), otherLabel, pr.String())
		}
	}
}
