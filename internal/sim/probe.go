package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/agentbreaker/agentbreaker/probe"
)

// StrategyProbe is agentbreaker-policy with a health probe of the dependency (package
// probe) every ProbeInterval at most: user calls never probe, the breaker's open period
// is the policy's Cooldown without growth (or ProbeInterval when shorter), and each
// probe is a health check that fails as a call would (with the outage's error rate
// during the outage, ErrorRate otherwise) and answers at once. It is not in
// Strategies(): name it in Scenario.Strategies (-strategies) to run it.
const StrategyProbe = "agentbreaker-probe"

// ProbeInterval is StrategyProbe's MaxInterval: the 30 s.
const ProbeInterval = 30 * time.Second

// OptInStrategies lists the strategies that run only when named.
func OptInStrategies() []string { return []string{StrategyProbe} }

// probeStream is the probe strategy's own random stream (after streams' five), so its
// health checks do not shift the users' arrivals or the calls' outcomes.
const probeStream = 6

// startProber attaches a prober to the abGuard's breaker and runs it on the engine's
// schedule.
func (x *sim) startProber(g *abGuard, sr *StrategyResult) error {
	b, ok := g.deps.Get(x.s.Dependency)
	if !ok {
		return fmt.Errorf("sim: no breaker for %s", x.s.Dependency)
	}
	rnd := rand.New(rand.NewPCG(x.s.Seed, probeStream))
	p, err := probe.New(probe.Config{
		Checks: []probe.Check{{Breaker: b, Name: "health", Func: func(context.Context) error {
			if rnd.Float64() < x.errorRate(x.e.now) {
				return errors.New("health check failed: connection reset")
			}
			return nil
		}}},
		MaxInterval: ProbeInterval,
		Clock:       x.e.clk,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	var round func()
	round = func() {
		if next := p.ProbeDue(context.Background()); next.Before(x.end) {
			x.e.at(next, round)
		}
	}
	x.e.at(x.e.now, round)
	sr.Description += fmt.Sprintf("; a health probe every %v at most, user calls never probe", min(b.Policy().Cooldown, ProbeInterval))
	return nil
}
