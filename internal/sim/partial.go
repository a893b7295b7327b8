package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/throttle"
)

// Partial-outage strategies: agentbreaker's callbacks with the dependency's throttle on.
const (
	// StrategyThrottle: the throttle alone, behind a breaker whose gates are never
	// crossed (100% failures over 2^30 calls), so only the throttle sheds.
	StrategyThrottle = "agentbreaker-throttle"
	// StrategyBreakerThrottle: the scenario's breaker policy (as agentbreaker-policy
	// runs it) and the throttle together, as a user would run them.
	StrategyBreakerThrottle = "agentbreaker-breaker-throttle"
)

// PartialStrategies lists the partial-outage table's own rows, in order: no breaker,
// breaker, throttle, breaker and throttle (then any Peers).
func PartialStrategies() []string {
	return append([]string{StrategyNaive, StrategyPolicy, StrategyThrottle, StrategyBreakerThrottle}, candidateStrategies()...)
}

// LoadWindow is how far back a partial outage's dependency counts the calls it got.
const LoadWindow = 5 * time.Second

// Partial is a partial outage: during the outage the dependency handles at most
// Capacity calls per second, and fails the share above it, so that shedding load
// lowers the share that fails.
type Partial struct {
	// Scenario is everything else; zero fields take PartialScenario's values, its
	// OutageErrorRate and Strategies are not used.
	Scenario Scenario
	// Failing is the share of calls that fail during the outage at the base load (one
	// attempt per sub-agent call, TurnRate × SubAgents calls per second): it sets the
	// capacity to (1 − Failing) × base. In (0, 1]. Required.
	Failing float64
	// Throttle is the throttle the agentbreaker rows run. Zero fields take
	// PartialThrottle's values.
	Throttle throttle.Config
	// Peers are rows from other libraries, run in the same scenario after the
	// agentbreaker rows. Defaults to none.
	Peers []Peer
	// Shape is what makes calls fail (sim/shape.go): ShapeCapacity, a dependency with a
	// capacity that fails the load above it, or ShapeLoadIndependent, Failing of the
	// calls failing at random whatever the load. Defaults to ShapeCapacity.
	Shape string
	// LowNormal gives half the turns low priority and half normal, alternating by turn,
	// instead of a quarter at each of low, normal, high and critical. Defaults to false.
	LowNormal bool
	// Rows are the rows to run, a subset of PartialStrategies and the peers' names, in
	// row order. Defaults to all of them.
	Rows []string
}

// PartialThrottle is the throttle the partial-outage rows run: K = 1.25, so about a
// quarter more calls are sent than the dependency handles; 10 requests over a 20 s
// window before anything is shed.
var PartialThrottle = throttle.Config{K: 1.25, MinRequests: 10, Window: 20 * time.Second, Buckets: 10}

// PartialScenario is the scenario partial outages run in: more traffic than the
// incident (5 turns a second from 150 users) so that load is measurable over one
// second, and failures that come back fast (a 503 after ErrorLatency) rather than hang.
func PartialScenario() Scenario {
	return Scenario{TurnRate: 5, Users: 150, OutageMode: ModeError}.WithDefaults()
}

// Peer is a guard from another library, for comparison rows. It lives in a module of
// its own (sim/peers), so that no peer enters this module's dependencies.
type Peer struct {
	// Name is the row's name; Description says what it runs.
	Name, Description string
	// New builds the guard for one run; now reads the run's virtual clock.
	New func(now func() time.Time) PeerGuard
}

// PeerGuard is one run's peer guard. It is called from one goroutine.
type PeerGuard interface {
	// Admit is asked when a call starts: false rejects it, and the model gets the
	// peer's error.
	Admit() bool
	// Done reports a sent call's outcome when it completes.
	Done(failed bool)
}

// PartialResult is one partial outage's rows.
type PartialResult struct {
	Failing  float64
	Capacity float64 // calls per second the dependency handles during the outage (ShapeCapacity)
	Shape    string  // ShapeCapacity or ShapeLoadIndependent
	Result   *Result
	// Shed is what each throttle row's throttle shed during the outage, by priority,
	// keyed by row name.
	Shed map[string]PriorityShed
}

// RunPartial simulates one partial outage once per row and returns the results in row
// order: PartialStrategies, then the peers. The same input gives the same result.
func RunPartial(p Partial, opt Options) (*PartialResult, error) {
	s, px, err := partialSetup(p)
	if err != nil {
		return nil, err
	}
	names, err := partialRows(p)
	if err != nil {
		return nil, err
	}
	if len(p.Rows) > 0 { // the scenario lists the rows run
		s.Strategies = slices.DeleteFunc(s.Strategies, func(n string) bool { return !slices.Contains(names, n) })
	}
	res := &Result{Scenario: s, Start: Start}
	for i, name := range names {
		var progress func(time.Time)
		if opt.Progress != nil {
			progress = func(now time.Time) {
				f := float64(now.Sub(Start)) / float64(s.Duration)
				opt.Progress((float64(i) + math.Min(f, 1)) / float64(len(names)))
			}
		}
		sr, err := runStrategyWith(s, name, progress, px)
		if err != nil {
			return nil, fmt.Errorf("sim: strategy %s: %w", name, err)
		}
		res.Strategies = append(res.Strategies, *sr)
	}
	if opt.Progress != nil {
		opt.Progress(1)
	}
	pr := &PartialResult{Failing: p.Failing, Capacity: px.capacity, Shape: ShapeCapacity, Result: res, Shed: map[string]PriorityShed{}}
	if px.fixed > 0 {
		pr.Shape = ShapeLoadIndependent
	}
	for name, sc := range px.counters {
		pr.Shed[name] = sc.result()
	}
	return pr, nil
}

// partialSetup checks p and returns the scenario it runs in and its partial run.
func partialSetup(p Partial) (Scenario, *partialRun, error) {
	if math.IsNaN(p.Failing) || p.Failing <= 0 || p.Failing > 1 {
		return Scenario{}, nil, &ConfigError{Package: "sim", Field: "failing", Value: p.Failing, Problem: "must be more than 0 and at most 1"}
	}
	s := p.Scenario
	def := PartialScenario()
	if s.TurnRate == 0 {
		s.TurnRate = def.TurnRate
	}
	if s.Users == 0 {
		s.Users = def.Users
	}
	if s.OutageMode == "" {
		s.OutageMode = def.OutageMode
	}
	s.Strategies = []string{StrategyNaive, StrategyPolicy} // the rows Validate knows; the others are checked below
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return Scenario{}, nil, err
	}
	s.Strategies = PartialStrategies()
	tc := partialThrottle(p.Throttle)
	if _, err := throttle.New(tc); err != nil {
		return Scenario{}, nil, err
	}
	for i, pe := range p.Peers {
		if pe.Name == "" || pe.New == nil {
			return Scenario{}, nil, &ConfigError{Package: "sim", Field: fmt.Sprintf("Peers[%d]", i), Value: pe.Name, Problem: "needs a Name and New"}
		}
	}
	shape, err := partialShape(p.Shape)
	if err != nil {
		return Scenario{}, nil, err
	}
	base := s.TurnRate * float64(s.SubAgents)
	px := &partialRun{capacity: (1 - p.Failing) * base, throttle: tc, peers: p.Peers, seed: s.Seed,
		lowNormal: p.LowNormal, counters: map[string]*shedCounter{}}
	if shape == ShapeLoadIndependent {
		px.fixed = p.Failing
	}
	return s, px, nil
}

// partialThrottle is tc with PartialThrottle's values for its zero fields.
func partialThrottle(tc throttle.Config) throttle.Config {
	if tc.K == 0 {
		tc.K = PartialThrottle.K
	}
	if tc.MinRequests == 0 {
		tc.MinRequests = PartialThrottle.MinRequests
	}
	if tc.Window == 0 {
		tc.Window = PartialThrottle.Window
	}
	if tc.Buckets == 0 {
		tc.Buckets = PartialThrottle.Buckets
	}
	return tc
}

// partialRows is the rows p runs, in row order.
func partialRows(p Partial) ([]string, error) {
	all := append(PartialStrategies(), peerNames(p.Peers)...)
	if len(p.Rows) == 0 {
		return all, nil
	}
	var out []string
	for _, name := range all {
		if slices.Contains(p.Rows, name) {
			out = append(out, name)
		}
	}
	for _, name := range p.Rows {
		if !slices.Contains(all, name) {
			return nil, &ConfigError{Package: "sim", Field: "Rows", Value: name, Problem: "unknown row"}
		}
	}
	return out, nil
}

func peerNames(ps []Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// partialRun is a partial outage's part of one strategy's run.
type partialRun struct {
	capacity float64
	throttle throttle.Config
	peers    []Peer
	seed     uint64
	fixed    float64 // ShapeLoadIndependent: the share failing at any load; 0 for ShapeCapacity
	// lowNormal: half the turns low and half normal (Partial.LowNormal).
	lowNormal bool
	// counters holds each throttle row's shedCounter, by row name; shared by the
	// fresh copies.
	counters map[string]*shedCounter

	// Per run (fresh copies them empty).
	slots   [10]int      // calls sent per tenth of LoadWindow, a ring
	last    int64        // the slot index (time / (LoadWindow/10)) last written
	counter *shedCounter // the run's calls by priority; nil for a row without a throttle
}

// fresh is the partial run with its load counters empty, for the strategy name.
func (px *partialRun) fresh(name string) *partialRun {
	if px == nil {
		return nil
	}
	return &partialRun{capacity: px.capacity, throttle: px.throttle, peers: px.peers, seed: px.seed, fixed: px.fixed,
		lowNormal: px.lowNormal, counters: px.counters}
}

// countsShed starts counting the run's calls by priority, for a row with a throttle.
func (px *partialRun) countsShed(name string) {
	px.counter = newShedCounter(px.throttle)
	if px.counters != nil {
		px.counters[name] = px.counter
	}
}

const slotWidth = LoadWindow / 10

func (px *partialRun) slide(now time.Time) {
	i := now.Sub(Start).Nanoseconds() / int64(slotWidth)
	if i-px.last >= int64(len(px.slots)) {
		clear(px.slots[:])
	} else {
		for j := px.last + 1; j <= i; j++ {
			px.slots[j%int64(len(px.slots))] = 0
		}
	}
	if i > px.last {
		px.last = i
	}
}

// sent counts one call reaching the dependency.
func (px *partialRun) sent(now time.Time) {
	if px == nil {
		return
	}
	px.slide(now)
	px.slots[px.last%int64(len(px.slots))]++
}

// failing is the share of calls the dependency fails now: what its load exceeds its
// capacity by, and never less than its healthy error rate.
func (px *partialRun) failing(now time.Time, healthy float64) float64 {
	if px.fixed > 0 {
		return math.Max(healthy, px.fixed) // load-independent: a bad replica fails its share of any load
	}
	px.slide(now)
	n := 0
	for _, c := range px.slots {
		n += c
	}
	load := float64(n) / LoadWindow.Seconds()
	if load <= px.capacity {
		return healthy
	}
	return math.Max(healthy, 1-px.capacity/load)
}

// turnContext gives each turn its priority, as an application marking its users'
// requests would.
func (px *partialRun) turnContext(ctx context.Context, id int) context.Context {
	if px == nil {
		return ctx
	}
	return throttle.WithPriority(ctx, px.priority(id))
}

// priority is turn id's priority: a quarter each of low, normal, high and critical in
// turn order, or with lowNormal half low and half normal.
func (px *partialRun) priority(id int) throttle.Priority {
	if px.lowNormal {
		return throttle.Priorities()[id%2]
	}
	return throttle.Priorities()[id%4]
}

// guard sets up the partial-outage strategies and the peers.
func (px *partialRun) guard(x *sim, name string, sr *StrategyResult) (bool, error) {
	if px == nil {
		return false, nil
	}
	if ok, err := px.candidate(x, name, sr); ok || err != nil {
		return ok, err
	}
	switch name {
	case StrategyThrottle, StrategyBreakerThrottle:
		p, err := x.s.UserPolicy()
		if err != nil {
			return false, err
		}
		if name == StrategyThrottle {
			p.FailureRateThreshold, p.MinimumCalls, p.WindowCalls = 1, 1<<30, 0
		}
		tc := px.throttle
		r := rand.New(rand.NewPCG(px.seed, 6))
		tc.Rand = r.Uint64 // the engine runs one event at a time
		g, err := newABGuardWith(x.s, p, x.e, x.rec, x.rnd, &tc)
		if err != nil {
			return false, err
		}
		x.g = g
		x.px.countsShed(name)
		sr.Breaker = name == StrategyBreakerThrottle
		sr.Description = fmt.Sprintf("agentbreaker callbacks with the throttle (K %g, ≥%d requests in %v; priorities low/normal/high/critical by turn)",
			tc.K, tc.MinRequests, tc.Window)
		if sr.Breaker {
			sr.Description += "; breaker " + DescribePolicy(p)
			pi := policyInfo(p)
			sr.Policy = &pi
		}
		return true, nil
	}
	for _, pe := range px.peers {
		if pe.Name == name {
			x.g = &peerGuard{g: pe.New(x.e.clk.Now)}
			sr.Description = pe.Description
			return true, nil
		}
	}
	return false, nil
}

// adjust makes every agentbreaker row's failing calls the partial outage's 503s.
func (px *partialRun) adjust(g guard) {
	if ab, ok := g.(*abGuard); ok && px != nil {
		ab.overloaded = true
	}
}

// overloadError is how a partial outage's dependency fails: a 503, as genai returns it.
var overloadError = genai.APIError{Code: 503, Message: "overloaded", Status: "UNAVAILABLE"}

// peerGuard runs a peer's guard with one client attempt per call; a rejection reaches
// the model as the peer's error.
type peerGuard struct{ g PeerGuard }

func (g *peerGuard) admit(*call) (bool, answer) {
	if g.g.Admit() {
		return true, answerData
	}
	return false, answerError
}
func (g *peerGuard) finish(_ *call, failed, _ bool, _ time.Duration) { g.g.Done(failed) }
func (*peerGuard) endRun(*turn)                                      {}
func (*peerGuard) clientAttempts() int                               { return 1 }
func (*peerGuard) check() error                                      { return nil }

// Row is one line of a partial outage's table.
type Row struct {
	Name string
	// LiveTurns is the share of turns started during the outage that were answered
	// with the dependency's data.
	LiveTurns float64
	// Sent and Succeeded count calls during the outage; Waste is Sent/Succeeded.
	Sent, Succeeded int
	Waste           float64
	// Refused counts calls answered without being sent (shed, open, busy, budget).
	Refused int
	Trips   int
}

// Rows returns the table's rows.
func (pr *PartialResult) Rows() []Row {
	var out []Row
	for _, sr := range pr.Result.Strategies {
		s := sr.Summary
		ot := s.OutageTurns
		r := Row{Name: sr.Name, Sent: s.CallsDuringOutage, Succeeded: s.SucceededDuringOutage, Refused: s.Rejected, Trips: s.Trips}
		if n := ot.OK + ot.Degraded + ot.Failed; n > 0 {
			r.LiveTurns = float64(ot.OK) / float64(n)
		}
		r.Waste = math.Inf(1)
		if r.Succeeded > 0 {
			r.Waste = float64(r.Sent) / float64(r.Succeeded)
		}
		out = append(out, r)
	}
	return out
}

// Table prints the rows as a fixed-width text table.
func (pr *PartialResult) Table() string {
	var b strings.Builder
	if pr.Shape == ShapeLoadIndependent {
		fmt.Fprintf(&b, "%.0f%% failing at any load (load-independent: a bad replica, a flaky path)\n", pr.Failing*100)
	} else {
		fmt.Fprintf(&b, "%.0f%% failing at the base load (capacity %.1f calls/s)\n", pr.Failing*100, pr.Capacity)
	}
	fmt.Fprintf(&b, "%-32s %10s %8s %10s %12s %8s %6s\n", "row", "live data", "sent", "succeeded", "sent/succ.", "refused", "trips")
	for _, r := range pr.Rows() {
		waste := "-"
		if !math.IsInf(r.Waste, 1) {
			waste = fmt.Sprintf("%.2f", r.Waste)
		}
		fmt.Fprintf(&b, "%-32s %9.1f%% %8d %10d %12s %8d %6d\n", r.Name, r.LiveTurns*100, r.Sent, r.Succeeded, waste, r.Refused, r.Trips)
	}
	return b.String()
}
