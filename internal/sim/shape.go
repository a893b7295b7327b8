package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Partial-outage shapes: what makes a partial outage's calls fail.
const (
	// ShapeCapacity: the dependency handles at most (1 − Failing) of the base load and
	// answers 503 to the share of its load above that, so shedding lowers the share
	// that fails. An overloaded provider, a pool that lost replicas.
	ShapeCapacity = "capacity"
	// ShapeLoadIndependent: Failing of the calls fail with a 503 at any load, so
	// shedding lowers nothing. A bad replica behind a balancer, a flaky network path.
	ShapeLoadIndependent = "load-independent"
)

// Shapes lists the partial-outage shapes, the default first.
func Shapes() []string { return []string{ShapeCapacity, ShapeLoadIndependent} }

func partialShape(s string) (string, error) {
	switch s {
	case "", ShapeCapacity:
		return ShapeCapacity, nil
	case ShapeLoadIndependent:
		return s, nil
	}
	return "", &ConfigError{Package: "sim", Field: "shape", Value: s, Problem: fmt.Sprintf("must be %q or %q", ShapeCapacity, ShapeLoadIndependent)}
}

// Rows that try what a user facing either shape could configure instead, run in both
// shapes so that a choice is seen in the shape it was not made for too.
const (
	// StrategyBudget: the plugin with its retry budget and bulkhead, no throttle, and a
	// breaker whose gates are never crossed (as in agentbreaker-throttle).
	StrategyBudget = "agentbreaker-budget"
	// StrategyTolerantBreaker: the scenario's breaker policy with its failure-rate
	// threshold raised to TolerantThreshold, no throttle.
	StrategyTolerantBreaker = "agentbreaker-policy-rate-0.9"
	// StrategyThrottleHighK: the throttle with K = HighK, so that K × (1 − Failing) is
	// above 1 at 60% failing and the SRE rule has a fixed point below 1.
	StrategyThrottleHighK = "agentbreaker-throttle-k3"
	// StrategyThrottleRetries: the throttle, and a retry budget of RetryRatio of the
	// operations (the default is a tenth), so that the model's re-issues get through a
	// dependency that fails at random, and the throttle bounds them when it is
	// overloaded.
	StrategyThrottleRetries = "agentbreaker-throttle-retries"
)

// TolerantThreshold and HighK are the candidate rows' settings.
const (
	TolerantThreshold = 0.9
	HighK             = 3.0
	RetryRatio        = 1.0
)

func candidateStrategies() []string {
	return []string{StrategyBudget, StrategyTolerantBreaker, StrategyThrottleHighK, StrategyThrottleRetries}
}

// candidate sets up the candidate rows.
func (px *partialRun) candidate(x *sim, name string, sr *StrategyResult) (bool, error) {
	switch name {
	case StrategyBudget, StrategyTolerantBreaker, StrategyThrottleHighK, StrategyThrottleRetries:
	default:
		return false, nil
	}
	p, err := x.s.UserPolicy()
	if err != nil {
		return false, err
	}
	var tc *throttle.Config
	var bc retry.BudgetConfig
	switch name {
	case StrategyBudget:
		p.FailureRateThreshold, p.MinimumCalls, p.WindowCalls = 1, 1<<30, 0
		sr.Description = "agentbreaker callbacks without a throttle: retry budget and bulkhead; a breaker that never trips"
	case StrategyTolerantBreaker:
		p.FailureRateThreshold = TolerantThreshold
		sr.Description = "agentbreaker callbacks without a throttle: breaker " + DescribePolicy(p)
		sr.Breaker = true
		pi := policyInfo(p)
		sr.Policy = &pi
	case StrategyThrottleHighK:
		p.FailureRateThreshold, p.MinimumCalls, p.WindowCalls = 1, 1<<30, 0
		c := px.throttle
		c.K = HighK
		tc = &c
		sr.Description = fmt.Sprintf("agentbreaker callbacks with the throttle at K %g (≥%d requests in %v; priorities by turn)", c.K, c.MinRequests, c.Window)
	case StrategyThrottleRetries:
		p.FailureRateThreshold, p.MinimumCalls, p.WindowCalls = 1, 1<<30, 0
		c := px.throttle
		tc = &c
		bc.Ratio = RetryRatio
		sr.Description = fmt.Sprintf("agentbreaker callbacks with the throttle (K %g) and a retry budget of %g of the operations", c.K, bc.Ratio)
	}
	if tc != nil {
		r := rand.New(rand.NewPCG(px.seed, 6))
		tc.Rand = r.Uint64 // the engine runs one event at a time
		px.countsShed(name)
	}
	g, err := newABGuardBudget(x.s, p, x.e, x.rec, x.rnd, tc, bc)
	if err != nil {
		return false, err
	}
	x.g = g
	return true, nil
}
