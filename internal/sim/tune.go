package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
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
