package readme_test

// The Go blocks of the pages under docs/, compiled (TestReadmeGoBlocksAreCompiled reads
// every page). Edit them here first, then copy them into the page.

import (
	"context"
	"time"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/probe"
)

var _ = []any{probesPage}

// probesPage is docs/probes.md's "Configuring a probe".
func probesPage(ctx context.Context, pingTickets func(context.Context) error) error {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm":     {Tools: []string{"lookup_customer", "update_customer"}, Probe: &dependencymap.Probe{URL: "https://crm.internal/healthz"}},
			"tickets": {Tools: []string{"open_ticket"}, Probe: &dependencymap.Probe{Func: pingTickets, Timeout: 2 * time.Second}},
		},
		MaxProbeInterval: 30 * time.Second,
	})
	prober, err := probe.FromMap(deps, probe.Config{})
	if err != nil {
		return err // names the field and the value: a relative URL, a timeout past the lease, ...
	}
	defer prober.Close()
	go prober.Run(ctx)
	return nil
}
