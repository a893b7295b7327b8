package sim

import (
	"errors"
	"io"
	"math"
	"slices"
	"time"
)

// depStats is what the first pass learns of a dependency, and the second adds.
type depStats struct {
	calls      int
	tools      map[string]bool  // at most maxTools
	detectors  []outageDetector // one per width of detectorWidths
	outages    []Period
	bin        time.Duration // of the detector that found them
	first      time.Time
	last       time.Time
	maxElapsed time.Duration
	latency    histogram // healthy calls outside outages (second pass)
}

// maxTools is how many of a dependency's tools Tune keeps.
const maxTools = 100

// tuneStats is the first pass: per source of records, each dependency's outages. It
// returns the preferred source present (see ReadRecords) and its dependencies.
func tuneStats(open func() (io.ReadCloser, error)) (int, map[string]*depStats, int, error) {
	var bySource [sources]map[string]*depStats
	var n [sources]int
	var latest time.Time
	err := scanFile(open, func(r Record, src int) error {
		if latest = maxTime(latest, r.Start()); r.Start().Before(latest.Add(-detectorLag)) {
			return outOfOrder(r, latest)
		}
		if bySource[src] == nil {
			bySource[src] = map[string]*depStats{}
		}
		st := bySource[src][r.Dependency]
		if st == nil {
			st = &depStats{first: r.Start(), tools: map[string]bool{}, detectors: make([]outageDetector, len(detectorWidths))}
			for i, w := range detectorWidths {
				st.detectors[i].width = w
			}
			bySource[src][r.Dependency] = st
		}
		n[src]++
		st.calls++
		for i := range st.detectors {
			st.detectors[i].add(r)
		}
		if r.Tool != "" && len(st.tools) < maxTools {
			st.tools[r.Tool] = true
		}
		st.first, st.last = minTime(st.first, r.Start()), maxTime(st.last, r.End)
		st.maxElapsed = max(st.maxElapsed, r.Elapsed)
		return nil
	})
	if err != nil {
		return 0, nil, 0, err
	}
	for src, stats := range bySource {
		if stats != nil {
			for _, st := range stats {
				st.outages = st.incidents()
			}
			return src, stats, n[src], nil
		}
	}
	return 0, nil, 0, errors.New("sim: no call records (want agentbreaker's slog JSON records of calls, or a CSV of timestamp,dependency,outcome,latency_ms)")
}

// detectorWidths are the bins Tune may find a dependency's outages with: the narrowest
// that hold minBinCalls calls on average (DetectOutages needs 3 in a bin).
var detectorWidths = []time.Duration{BinWidth, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}

const minBinCalls = 5

// incidents returns the dependency's incidents, found in bins its traffic fills.
func (st *depStats) incidents() []Period {
	span := st.last.Sub(st.first)
	i := 0
	for i < len(detectorWidths)-1 && float64(st.calls)*float64(detectorWidths[i]) < minBinCalls*float64(span) {
		i++
	}
	for j := range st.detectors {
		if j != i && j != 0 {
			st.detectors[j].finish() // nothing to keep
		}
	}
	st.bin = detectorWidths[i]
	return joinOutages(st.detectors[i].finish(), IncidentGap)
}

// IncidentGap and MinIncident make DetectOutages' outages incidents: outages less than
// IncidentGap apart are one incident (a flapping dependency, a partial outage whose
// failing bins come and go), so that a held-out outage is a whole incident; an
// incident shorter than MinIncident is a blip of the healthy dependency, where a trip
// is a false trip.
const (
	IncidentGap = 5 * time.Minute
	MinIncident = time.Minute
)

func joinOutages(ps []Period, gap time.Duration) []Period {
	var out []Period
	for _, p := range ps {
		if n := len(out); n > 0 && p.Start.Sub(out[n-1].End) < gap {
			out[n-1].End = p.End
			continue
		}
		out = append(out, p)
	}
	return slices.DeleteFunc(out, func(p Period) bool { return p.End.Sub(p.Start) < MinIncident })
}

func scanFile(open func() (io.ReadCloser, error), fn func(Record, int) error) error {
	f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	return scanRecords(f, fn)
}

// Sizing is what the healthy calls' latency and rate say about timeouts and limits.
type Sizing struct {
	P50  time.Duration `json:"p50"`
	P99  time.Duration `json:"p99"`
	P995 time.Duration `json:"p99_5"`
	// Timeout is TimeoutRule applied to P995.
	Timeout time.Duration `json:"timeout"`
	// MeanRate and PeakRate are calls a second: over the records, and in the busiest
	// 10 s.
	MeanRate float64 `json:"mean_rate"`
	PeakRate float64 `json:"peak_rate"`
	// MinLimit and MaxLimit bound an adaptive concurrency limit (or size a bulkhead:
	// MaxLimit), by LimitRule.
	MinLimit int `json:"min_limit"`
	MaxLimit int `json:"max_limit"`
}

// TimeoutRule and LimitRule say how Sizing is derived, in words, for the report.
const (
	TimeoutRule = "tool timeout = p99.5 of healthy latency × 1.5, at least p99.5 + 100 ms, rounded up to 100 ms " +
		"(Hystrix's operations guide: the 99.5th percentile plus a margin); probe lease = the timeout rounded up to 1 s"
	LimitRule = "Little's law, L = λ·W: max limit (or bulkhead size) = 2 × peak rate (busiest 10 s) × p99 latency, " +
		"at least 4; min limit = mean rate × p50 latency, at least 1 and at most max limit"
)

func (st *depStats) sizing() Sizing {
	s := Sizing{P50: st.latency.quantile(0.5), P99: st.latency.quantile(0.99), P995: st.latency.quantile(0.995)}
	s.Timeout = roundUp(max(s.P995*3/2, s.P995+100*time.Millisecond), 100*time.Millisecond)
	if span := st.last.Sub(st.first).Seconds(); span > 0 {
		s.MeanRate = float64(st.calls) / span
	}
	s.PeakRate = float64(st.detectors[0].Peak) / BinWidth.Seconds()
	s.MaxLimit = max(4, int(math.Ceil(2*s.PeakRate*s.P99.Seconds())))
	s.MinLimit = min(s.MaxLimit, max(1, int(math.Ceil(s.MeanRate*s.P50.Seconds()))))
	return s
}

func roundUp(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}

// histogram counts latencies in buckets 1% apart, from 1 ms to an hour: bounded
// memory, quantiles within 1%.
type histogram struct {
	counts []int
	n      int
}

const histBase = 1.01

func (h *histogram) add(d time.Duration) {
	ms := max(d.Seconds()*1000, 1)
	i := min(int(math.Log(ms)/math.Log(histBase)), 1200)
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]int, i+1-len(h.counts))...)
	}
	h.counts[i]++
	h.n++
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *histogram) quantile(q float64) time.Duration {
	want := int(math.Ceil(q * float64(h.n)))
	seen := 0
	for i, c := range h.counts {
		if seen += c; seen >= want && c > 0 {
			return time.Duration(math.Pow(histBase, float64(i+1)) * float64(time.Millisecond))
		}
	}
	return 0
}
