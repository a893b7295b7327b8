package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// Start is the virtual instant every run starts at: 14:00, as in the design document's
// incident (the outage begins at 14:02 with the default OutageStart).
var Start = time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC)

// Options tune a run without changing what it simulates.
type Options struct {
	// Progress, when set, is told now and then how far the run is, from 0 to 1, over all
	// strategies. It runs on the caller's goroutine. Defaults to none.
	Progress func(done float64)
}

// Run simulates the scenario once per strategy and returns the results in the
// scenario's strategy order. The same scenario always gives the same result.
func Run(s Scenario, opt Options) (*Result, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Scenario: s, Start: Start}
	for i, name := range s.Strategies {
		var progress func(time.Time)
		if opt.Progress != nil {
			progress = func(now time.Time) {
				f := float64(now.Sub(Start)) / float64(s.Duration)
				opt.Progress((float64(i) + math.Min(f, 1)) / float64(len(s.Strategies)))
			}
		}
		sr, err := runStrategy(s, name, progress)
		if err != nil {
			return nil, fmt.Errorf("sim: strategy %s: %w", name, err)
		}
		res.Strategies = append(res.Strategies, *sr)
	}
	if opt.Progress != nil {
		opt.Progress(1)
	}
	return res, nil
}

// streams are the run's random generators, one per concern, so that a strategy that
// makes more calls does not shift the users' arrivals or the model's choices.
type streams struct {
	users, dep, model, client, retry, jitter *rand.Rand
}

func newStreams(seed uint64) streams {
	mk := func(k uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, k)) }
	return streams{users: mk(1), dep: mk(2), model: mk(3), client: mk(4), retry: mk(5), jitter: mk(6)}
}

// sim is one strategy's run.
type sim struct {
	s     Scenario
	e     *engine
	g     guard
	rec   *recorder
	rnd   streams
	end   time.Time
	turns int
	calls int
	px    *partialRun // a partial outage's load model and extra strategies; nil otherwise
}

// turn is one user turn: a model step, the sub-agents' calls, a model step that answers
// or re-issues the failed calls, and so on.
type turn struct {
	id       int
	user     int
	start    time.Time
	inv      *invocation
	issue    int   // model issues so far
	pending  int   // sub-agent calls of this issue not finished
	failed   []int // sub-agents whose call of this issue got no data
	invite   float64
	inFlight int  // calls sent and not finished
	served   bool // a call of it succeeded: the throttle ranks its later calls critical
	done     bool
	ended    bool
}

func runStrategy(s Scenario, name string, progress func(time.Time)) (*StrategyResult, error) {
	return runStrategyWith(s, name, progress, nil)
}

func runStrategyWith(s Scenario, name string, progress func(time.Time), px *partialRun) (*StrategyResult, error) {
	e := newEngine(Start)
	x := &sim{s: s, e: e, rnd: newStreams(s.Seed), end: Start.Add(s.Duration), px: px.fresh(name)}
	x.rec = newRecorder(s, Start)
	sr := &StrategyResult{Name: name}
	switch name {
	case StrategyNaive:
		x.g = noGuard{attempts: s.ClientAttempts}
		sr.Description = fmt.Sprintf("no breaker, no bulkhead; client %d attempts × %d sub-agents × %d model issues",
			s.ClientAttempts, s.SubAgents, max(s.Reissues, 0)+1)
	case StrategyConsecutive:
		p := gobreakerDefaults
		x.g = &consecutiveGuard{p: p, attempts: s.ClientAttempts, now: e.clk.Now, rec: x.rec}
		sr.Description = fmt.Sprintf("trips after more than %d consecutive failures, open %s, one probe; same retries as naive",
			p.MaxConsecutive, shortDuration(p.Open))
		sr.Breaker = true
	case StrategyDefaults, StrategyPolicy, StrategyProbe:
		var def breaker.Policy // the plugin's defaults: dependencymap applies its tool defaults
		if name != StrategyDefaults {
			var err error
			if def, err = s.userConfig(); err != nil {
				return nil, err
			}
		}
		g, err := newABGuard(s, def, e, x.rec, x.rnd)
		if err != nil {
			return nil, err
		}
		x.g = g
		// What the breaker runs, read back from it: never the input.
		p := g.policy()
		sr.Description = fmt.Sprintf("agentbreaker callbacks: %s; bulkhead %d; retry budget; one client attempt",
			DescribePolicy(p), s.Bulkhead)
		sr.Breaker = true
		pi := policyInfo(p)
		sr.Policy = &pi
		if name == StrategyProbe {
			if err := x.startProber(g, sr); err != nil { // sim/probe.go
				return nil, err
			}
		}
	default:
		ok, err := x.px.guard(x, name, sr)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &ConfigError{Package: "sim", Field: "strategies", Value: name, Problem: "unknown strategy"}
		}
	}
	x.px.adjust(x.g)
	for u := 0; u < s.Users; u++ {
		u := u
		e.after(x.think(), func() { x.startTurn(u) })
	}
	e.run(x.end, progress)
	if err := x.g.check(); err != nil {
		return nil, err
	}
	x.rec.finish(x.end, sr)
	return sr, nil
}

// think is the wait until a user's next turn: exponential, with mean Users/TurnRate.
func (x *sim) think() time.Duration {
	mean := float64(x.s.Users) / x.s.TurnRate * float64(time.Second)
	return time.Duration(x.rnd.users.ExpFloat64() * mean)
}

func (x *sim) startTurn(user int) {
	if !x.e.now.Before(x.end) {
		return
	}
	x.e.after(x.think(), func() { x.startTurn(user) })
	x.turns++
	t := &turn{id: x.turns, user: user, start: x.e.now}
	t.inv = &invocation{Context: x.px.turnContext(context.Background(), t.id), id: "turn-" + strconv.Itoa(t.id)}
	x.e.after(x.s.TurnTimeout, func() {
		if !t.done {
			x.finishTurn(t, outcomeFailed)
		}
	})
	subs := make([]int, x.s.SubAgents)
	for i := range subs {
		subs[i] = i
	}
	x.e.after(x.s.ModelLatency, func() { x.issue(t, subs) })
}

// issue is one model step calling the tool from each listed sub-agent, in parallel.
func (x *sim) issue(t *turn, subs []int) {
	if t.done {
		return
	}
	t.issue++
	t.pending, t.failed, t.invite = len(subs), t.failed[:0], 0
	for _, sub := range subs {
		x.attempt(t, sub, 1)
	}
}

// attempt is one try of the tool's client to reach the dependency.
func (x *sim) attempt(t *turn, sub, n int) {
	if t.done {
		x.maybeEndRun(t)
		return
	}
	x.calls++
	c := &call{turn: t, sub: sub, attempt: n, id: "call-" + strconv.Itoa(x.calls),
		args: map[string]any{"sub_agent": sub, "turn": t.id}}
	now := x.e.now
	ok, ans := x.g.admit(c)
	x.px.countShed(x, c, now, ok)
	if !ok {
		x.rec.rejected(now)
		if ans == answerError && n < x.g.clientAttempts() {
			x.e.after(x.backoff(n), func() { x.attempt(t, sub, n+1) })
			return
		}
		x.subDone(t, sub, ans)
		return
	}
	x.px.sent(now)
	failed := x.rnd.dep.Float64() < x.errorRate(now)
	var d time.Duration
	switch {
	case !failed:
		d = time.Duration(float64(x.s.Latency) * (0.5 + x.rnd.dep.Float64()))
	case x.s.OutageMode == ModeHang && x.inOutage(now):
		d = x.s.ToolTimeout + time.Second // it never answers: the timeout ends it
	default:
		d = x.s.ErrorLatency
	}
	var retryAfter time.Duration // stated by a fast failure of the outage
	if failed && x.s.OutageMode == ModeError && x.inOutage(now) {
		retryAfter = x.s.RetryAfter
	}
	timedOut := d >= x.s.ToolTimeout
	if timedOut {
		d, failed = x.s.ToolTimeout, true
	}
	x.rec.sent(now, d, timedOut)
	t.inFlight++
	x.e.after(d, func() {
		t.inFlight--
		x.rec.completed(now, failed) // in the bin it was sent in, so failed ≤ calls per bin
		x.g.finish(c, failed, timedOut, retryAfter)
		t.served = t.served || !failed
		switch {
		case !failed:
			x.subDone(t, sub, answerData)
		case n < x.g.clientAttempts() && !t.done:
			x.e.after(x.backoff(n), func() { x.attempt(t, sub, n+1) })
		default:
			x.subDone(t, sub, answerError)
		}
		x.maybeEndRun(t)
	})
}

// backoff is the client's full-jitter wait after attempt n.
func (x *sim) backoff(n int) time.Duration {
	ceiling := float64(x.s.ClientBackoff) * math.Pow(2, float64(n-1))
	return time.Duration(x.rnd.client.Float64() * ceiling)
}

func (x *sim) inOutage(t time.Time) bool {
	return !t.Before(x.s.onset(Start)) && t.Before(x.s.recovery(Start))
}

func (x *sim) errorRate(t time.Time) float64 {
	if x.inOutage(t) {
		if x.px != nil {
			return x.px.failing(t, x.s.ErrorRate)
		}
		return x.s.OutageErrorRate
	}
	return x.s.ErrorRate
}

// subDone records one sub-agent's answer for this issue; when all are in, the model
// takes a step.
func (x *sim) subDone(t *turn, sub int, ans answer) {
	if t.done {
		x.maybeEndRun(t)
		return
	}
	t.pending--
	if ans != answerData {
		t.failed = append(t.failed, sub)
		t.invite = math.Max(t.invite, x.invitation(ans))
	}
	if t.pending > 0 {
		return
	}
	x.e.after(x.s.ModelLatency, func() { x.decide(t) })
}

// invitation is the chance the model calls again after this answer.
func (x *sim) invitation(a answer) float64 {
	switch a {
	case answerError:
		return x.s.ReissueAfterError
	case answerUnavailable:
		return x.s.ReissueAfterUnavailable
	default: // firm, outcome unknown
		return 0
	}
}

// decide is the model's step after its calls: answer, or call the failed ones again.
func (x *sim) decide(t *turn) {
	if t.done {
		return
	}
	if len(t.failed) == 0 {
		x.finishTurn(t, outcomeOK)
		return
	}
	if t.issue <= x.s.Reissues && x.rnd.model.Float64() < t.invite {
		x.issue(t, append([]int(nil), t.failed...))
		return
	}
	x.finishTurn(t, outcomeDegraded)
}

func (x *sim) finishTurn(t *turn, o outcome) {
	t.done = true
	x.rec.turn(t.start, x.e.now, o)
	x.maybeEndRun(t)
}

// maybeEndRun ends the turn's run once the user has the answer and no call is in
// flight: adk-go's run waits for its tool calls.
func (x *sim) maybeEndRun(t *turn) {
	if t.done && t.inFlight == 0 && !t.ended {
		t.ended = true
		x.g.endRun(t)
	}
}
