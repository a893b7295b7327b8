package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// TuneGrid is the grid of policies Tune tries: every combination, the other fields
// from TuneConfig.Base.
type TuneGrid struct {
	SweepGrid
	Cooldowns []time.Duration
}

// DefaultTuneGrid is 3 rates × 4 volume gates × 3 windows × 3 cooldowns: 108 policies.
// Its smallest volume gate, 5, is the least that lint does not warn about.
var DefaultTuneGrid = TuneGrid{
	SweepGrid: SweepGrid{
		FailureRates: []float64{0.25, 0.5, 0.75},
		MinimumCalls: []int{5, 10, 20, 40},
		Windows:      []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute},
	},
	Cooldowns: []time.Duration{10 * time.Second, 30 * time.Second, time.Minute},
}

// Policies returns the grid's policies over base, in a fixed order.
func (g TuneGrid) Policies(base breaker.Policy) []breaker.Policy {
	var out []breaker.Policy
	for _, w := range g.Windows {
		for _, mc := range g.MinimumCalls {
			for _, fr := range g.FailureRates {
				for _, cd := range g.Cooldowns {
					p := base
					p.FailureRateThreshold, p.MinimumCalls, p.Window, p.Cooldown = fr, mc, w, cd
					if p.MaxCooldown != 0 {
						p.MaxCooldown = max(p.MaxCooldown, cd)
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// TuneConfig is what Tune tries and how.
type TuneConfig struct {
	// Base is the policy compared against (the plugin's default for a tool, or the
	// dependency file's) and the one the grid's policies start from. Defaults to
	// breaker.Policy{}'s defaults.
	Base breaker.Policy
	// Grid is the candidates. Defaults to DefaultTuneGrid.
	Grid TuneGrid
	// Allowed, when set, leaves out of the recommendation each candidate for which it
	// returns an error (agentbreaker tune passes lint's checks). The candidate is still
	// replayed and shown.
	Allowed func(breaker.Policy) error
	// Workers is how many goroutines replay the candidates. Defaults to GOMAXPROCS.
	Workers int
}

// MinOutages is the evidence Tune needs for a dependency: one outage to hold out and
// at least one to fit on.
const MinOutages = 2

// Segment is the stretch of the records around one outage: from halfway since the
// previous outage's end to halfway to the next one's start. Leaving one outage out
// leaves out its segment, healthy calls and false trips included.
type Segment struct {
	// DeadSent counts the calls sent to the dependency during the outage; Saved those
	// the breaker would have answered at once.
	DeadSent int `json:"dead_sent"`
	Saved    int `json:"saved"`
	// HealthyRefused counts the calls outside the outage that the breaker would have
	// refused; FalseTrips its trips outside the outage.
	HealthyRefused int `json:"healthy_refused"`
	FalseTrips     int `json:"false_trips"`
	// TripAfterOnset is how long after the outage began the breaker first opened in
	// it, in seconds (null when it did not).
	TripAfterOnset *float64 `json:"trip_after_onset_s"`
}

func (s *Segment) add(o Segment) {
	s.DeadSent += o.DeadSent
	s.Saved += o.Saved
	s.HealthyRefused += o.HealthyRefused
	s.FalseTrips += o.FalseTrips
}

// Candidate is one policy replayed over the records, segment by segment.
type Candidate struct {
	Policy   PolicyInfo `json:"policy"`
	Segments []Segment  `json:"segments"`
	// Total sums the segments.
	Total Segment `json:"total"`
	// Refused says why the candidate may not be recommended (lint's warning), or "".
	Refused string `json:"refused,omitempty"`

	policy breaker.Policy
	trips  []time.Time // the instants it opened from closed
}

// without is c's total over every segment but k (-1: all of them).
func (c *Candidate) without(k int) Segment {
	var s Segment
	for i, seg := range c.Segments {
		if i != k {
			s.add(seg)
		}
	}
	return s
}

// Label names c by what the grid varies: "25% of ≥10 in 1m, cooldown 30s".
func (c *Candidate) Label() string {
	p := c.Policy
	return fmt.Sprintf("%g%% of ≥%d in %s, cooldown %s", p.FailureRateThreshold*100, p.MinimumCalls, p.Window, p.Cooldown)
}

// PolicyOf returns the policy c replayed.
func PolicyOf(c *Candidate) breaker.Policy { return c.policy }

// Ranked returns dt's candidates that may be recommended, best first over every
// segment.
func Ranked(dt *DependencyTune) []*Candidate {
	var out []*Candidate
	for _, c := range dt.Candidates {
		if c.Refused == "" {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *Candidate) int {
		switch {
		case better(a, b, -1):
			return -1
		case better(b, a, -1):
			return 1
		}
		return 0
	})
	return out
}

// TuneRule says how a candidate is chosen, in words, for the report.
const TuneRule = "leave one outage out: for each outage, the candidate that does best on the other outages' segments " +
	"(fewest false trips; then fewest calls sent to the dead dependency plus healthy calls refused; then the larger " +
	"volume gate and the longer window), judged on the outage it did not see; recommended is the candidate chosen " +
	"by most folds (ties: the better over all segments)"

// better reports whether a beats b on the segments other than k, by TuneRule.
func better(a, b *Candidate, k int) bool {
	sa, sb := a.without(k), b.without(k)
	if sa.FalseTrips != sb.FalseTrips {
		return sa.FalseTrips < sb.FalseTrips
	}
	if ma, mb := sa.DeadSent+sa.HealthyRefused, sb.DeadSent+sb.HealthyRefused; ma != mb {
		return ma < mb
	}
	if a.policy.MinimumCalls != b.policy.MinimumCalls {
		return a.policy.MinimumCalls > b.policy.MinimumCalls
	}
	return a.policy.Window > b.policy.Window
}

// Fold is one outage held out: the candidate fitted on the others, and how it and the
// base policy did on the held-out segment.
type Fold struct {
	Outage Period  `json:"outage"`
	Chosen int     `json:"chosen"` // index in Candidates
	Held   Segment `json:"held_out"`
	Base   Segment `json:"base"`
}

// DependencyTune is Tune's answer for one dependency.
type DependencyTune struct {
	Dependency string   `json:"dependency"`
	Calls      int      `json:"calls"`
	Tools      []string `json:"tools"`
	Outages    []Period `json:"outages"`
	// NoRecommendation says why there is none (too little evidence), or "".
	NoRecommendation string       `json:"no_recommendation,omitempty"`
	Base             *Candidate   `json:"base,omitempty"`
	Candidates       []*Candidate `json:"candidates,omitempty"`
	Folds            []Fold       `json:"folds,omitempty"`
	// Best is the recommended candidate's index, -1 when none; Votes how many folds
	// chose it.
	Best  int `json:"best"`
	Votes int `json:"votes"`
	// HeldOut sums the folds' held-out segments under their chosen candidates;
	// BaseHeldOut the same segments under the base policy.
	HeldOut     Segment `json:"held_out"`
	BaseHeldOut Segment `json:"base_held_out"`
	Sizing      Sizing  `json:"sizing"`

	from time.Time     // the first call's start
	bin  time.Duration // the width of the bins its outages were found in
}

// TuneResult is Tune's answer.
type TuneResult struct {
	Records      int              `json:"records"`
	Dependencies []DependencyTune `json:"dependencies"`
}

// Tune recommends a breaker policy per dependency from recorded calls. It reads the
// records twice through open, holding neither: first to find each dependency's
// outages, then to replay every candidate of cfg.Grid, and the base policy, on real
// breakers at once. A dependency with fewer than MinOutages outages gets no
// recommendation, and says why.
func Tune(open func() (io.ReadCloser, error), cfg TuneConfig) (*TuneResult, error) {
	if cfg.Grid.Windows == nil {
		cfg.Grid = DefaultTuneGrid
	}
	src, stats, n, err := tuneStats(open)
	if err != nil {
		return nil, err
	}
	res := &TuneResult{Records: n}
	var replayed []*DependencyTune
	for _, dep := range sortedDeps(stats) {
		st := stats[dep]
		dt := DependencyTune{Dependency: dep, Calls: st.calls, Tools: slices.Sorted(maps.Keys(st.tools)), Outages: st.outages, Best: -1, from: st.first, bin: st.bin}
		if len(st.outages) < MinOutages {
			dt.NoRecommendation = fmt.Sprintf("%d outage(s) in the records; tune needs at least %d: one to fit on "+
				"and one to check the fit on (record longer, or through more incidents)", len(st.outages), MinOutages)
		}
		res.Dependencies = append(res.Dependencies, dt)
	}
	for i := range res.Dependencies {
		if res.Dependencies[i].NoRecommendation == "" {
			replayed = append(replayed, &res.Dependencies[i])
		}
	}
	if len(replayed) == 0 {
		return res, nil
	}
	if err := tuneReplay(open, src, stats, replayed, cfg); err != nil {
		return nil, err
	}
	for _, dt := range replayed {
		dt.Sizing = stats[dt.Dependency].sizing()
		dt.choose()
	}
	return res, nil
}

// choose runs the folds and picks the recommendation.
func (dt *DependencyTune) choose() {
	votes := make([]int, len(dt.Candidates))
	for k, o := range dt.Outages {
		best := -1
		for i, c := range dt.Candidates {
			if c.Refused == "" && (best < 0 || better(c, dt.Candidates[best], k)) {
				best = i
			}
		}
		if best < 0 {
			dt.NoRecommendation = "every candidate was refused: " + dt.Candidates[0].Refused
			return
		}
		votes[best]++
		f := Fold{Outage: o, Chosen: best, Held: dt.Candidates[best].Segments[k], Base: dt.Base.Segments[k]}
		dt.Folds = append(dt.Folds, f)
		dt.HeldOut.add(f.Held)
		dt.BaseHeldOut.add(f.Base)
	}
	for i, v := range votes {
		if v > 0 && (dt.Best < 0 || v > votes[dt.Best] || v == votes[dt.Best] && better(dt.Candidates[i], dt.Candidates[dt.Best], -1)) {
			dt.Best = i
		}
	}
	dt.Votes = votes[dt.Best]
}

func sortedDeps(stats map[string]*depStats) []string {
	deps := make([]string, 0, len(stats))
	for d := range stats {
		deps = append(deps, d)
	}
	slices.SortFunc(deps, func(a, b string) int {
		if stats[a].calls != stats[b].calls {
			return stats[b].calls - stats[a].calls
		}
		return strings.Compare(a, b)
	})
	return deps
}

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
	err := scanFile(open, func(r Record, src int) error {
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

// tuneReplay is the second pass: records in order of start through every candidate's
// breaker, the candidates shared out among workers.
func tuneReplay(open func() (io.ReadCloser, error), src int, stats map[string]*depStats, deps []*DependencyTune, cfg TuneConfig) error {
	policies := append([]breaker.Policy{cfg.Base}, cfg.Grid.Policies(cfg.Base)...)
	workers := max(1, min(cmp0(cfg.Workers, runtime.GOMAXPROCS(0)), len(policies)))
	index := map[string]int{}
	var lag time.Duration
	for i, dt := range deps {
		index[dt.Dependency] = i
		lag = max(lag, stats[dt.Dependency].maxElapsed)
		for _, p := range policies {
			c := &Candidate{Policy: policyInfo(simPolicy(p)), policy: simPolicy(p), Segments: make([]Segment, len(dt.Outages))}
			if cfg.Allowed != nil && dt.Base != nil {
				if err := cfg.Allowed(p); err != nil {
					c.Refused = err.Error()
				}
			}
			if dt.Base == nil {
				dt.Base = c
			} else {
				dt.Candidates = append(dt.Candidates, c)
			}
		}
	}
	shards := make([]*shard, workers)
	for w := range shards {
		sh, err := newShard(deps, w, workers)
		if err != nil {
			return err
		}
		shards[w] = sh
	}
	err := streamInOrder(open, src, lag, index, func(r Record, dep int) {
		dt := deps[dep]
		if !inAny(dt.Outages, r.Start()) && r.Verdict == classify.Healthy {
			stats[dt.Dependency].latency.add(r.Elapsed)
		}
	}, shards)
	for _, dt := range deps {
		for _, c := range append([]*Candidate{dt.Base}, dt.Candidates...) {
			c.Total = c.without(-1)
		}
	}
	return err
}

func cmp0(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func inAny(ps []Period, t time.Time) bool {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].End.After(t) })
	return i < len(ps) && ps[i].contains(t)
}

// byStart orders the records waiting to be replayed.
type byStart []tuneRecord

type tuneRecord struct {
	Record
	dep int
}

func (q byStart) Len() int           { return len(q) }
func (q byStart) Less(i, j int) bool { return q[i].Start().Before(q[j].Start()) }
func (q byStart) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *byStart) Push(x any)        { *q = append(*q, x.(tuneRecord)) }
func (q *byStart) Pop() any {
	old := *q
	r := old[len(old)-1]
	*q = old[:len(old)-1]
	return r
}

// batchSize is how many records go to the workers at once.
const batchSize = 4096

// streamInOrder reads the records of source src and of the dependencies in index, and
// hands them to every shard in order of start, in batches. Records arrive in about the
// order they ended, so one that started more than lag (the longest call) before the
// latest end can be released: no later record starts before it. each sees every
// record first, in the same order.
func streamInOrder(open func() (io.ReadCloser, error), src int, lag time.Duration, index map[string]int,
	each func(Record, int), shards []*shard) error {
	for _, sh := range shards {
		sh.start()
	}
	var q byStart
	var latest time.Time
	batch := make([]tuneRecord, 0, batchSize)
	release := func(r tuneRecord) {
		each(r.Record, r.dep)
		if batch = append(batch, r); len(batch) == batchSize {
			for _, sh := range shards {
				sh.in <- batch
			}
			batch = make([]tuneRecord, 0, batchSize)
		}
	}
	err := scanFile(open, func(r Record, s int) error {
		dep, ok := index[r.Dependency]
		if s != src || !ok {
			return nil
		}
		heap.Push(&q, tuneRecord{r, dep})
		latest = maxTime(latest, r.End)
		for q.Len() > 0 && q[0].Start().Before(latest.Add(-lag)) {
			release(heap.Pop(&q).(tuneRecord))
		}
		return nil
	})
	for q.Len() > 0 {
		release(heap.Pop(&q).(tuneRecord))
	}
	for _, sh := range shards {
		sh.in <- batch
		close(sh.in)
	}
	for _, sh := range shards {
		<-sh.done
	}
	return err
}
