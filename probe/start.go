package probe

import (
	"context"

	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Start is FromMap and Run in one call: it returns a Prober for every dependency of m
// that has a Probe (and every check in cfg.Checks), already probing on a goroutine of
// its own until ctx is done or Close is called. Close then also waits for that
// goroutine to return. It returns nil and no error when nothing is to be probed.
//
// A prober built by FromMap whose Run nobody calls never probes: its breakers stay
// open until it hands probing back to user calls. Start cannot be half-wired that way.
func Start(ctx context.Context, m *dependencymap.Map, cfg Config) (*Prober, error) {
	p, err := FromMap(m, cfg)
	if p == nil || err != nil {
		return p, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	p.stopRun = func() {
		cancel()
		<-done
	}
	go func() {
		defer close(done)
		_ = p.Run(ctx) // ctx's error, once Close or the caller ends it
	}()
	return p, nil
}
