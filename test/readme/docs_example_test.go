package readme_test

// The Go blocks of the pages under docs/, compiled (TestReadmeGoBlocksAreCompiled reads
// every page). Edit them here first, then copy them into the page.

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/probe"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

var _ = []any{probesPage, fleetClientPage, mcpPage, mcpPlainPage, readmeMCP, toolsTurnPage, mcpStatusPage, mcpServerPage}

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

// fleetClientPage is docs/fleet.md's block for an injected client.
func fleetClientPage() error {
	// Redis Cluster (see ExampleConfig_client in fleet/example_test.go).
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:       []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true,
	})
	// Sentinel: redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
	// SentinelAddrs: sentinels, ...}), or redis.NewUniversalClient with MasterName set.
	defer client.Close() // after f.Close
	f, err := fleet.New(fleet.Config{Client: client, App: "support-agent"})
	if err != nil {
		return err
	}
	defer f.Close()
	return nil
}

// mcpPage is docs/mcp.md's wiring.
func mcpPage(llm model.LLM) error {
	deps := dependencymap.MustNew(dependencymap.Config{})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}})

	payments, err := mcpguard.New(mcpguard.Config{
		Dependency: "payments",
		Callbacks:  guard,
		Toolset:    mcptoolset.Config{Endpoint: "http://payments.internal/mcp"},
	})
	if err != nil {
		return err
	}
	defer payments.Close()
	cashier, err := llmagent.New(llmagent.Config{Name: "cashier", Model: llm, Toolsets: []tool.Toolset{payments}})
	if err != nil {
		return err
	}
	_, err = runner.New(runner.Config{AppName: "shop", Agent: cashier, SessionService: session.InMemoryService(),
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}}})
	return err
}

// mcpPlainPage is docs/mcp.md's plain-tool form, for comparison.
func mcpPlainPage() *dependencymap.Map {
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"lookup_customer", "list_orders"}},
	}})
	return deps
}

// readmeMCP is the README's MCP form, beside the Quick start.
func readmeMCP(guard *callbacks.Callbacks) (*mcpguard.Toolset, error) {
	payments, err := mcpguard.New(mcpguard.Config{
		Dependency: "payments",
		Callbacks:  guard,
		Toolset:    mcptoolset.Config{Endpoint: "http://payments.internal/mcp"},
	})
	return payments, err
}

// toolsTurnPage is docs/tools.md's turn check with an MCP tool set.
func toolsTurnPage(r *runner.Runner, tools []tool.Tool, payments *mcpguard.Toolset) (*tooltimeout.Turn, error) {
	turn, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{Runner: r, Timeout: time.Minute,
		Tools: tools, Toolsets: []tool.Toolset{payments}}) // payments: an mcpguard.Toolset, 30 s per call
	return turn, err
}

// mcpStatusPage is docs/mcp.md's status lookup for an MCP dependency.
func mcpStatusPage(ctx context.Context, deps *dependencymap.Map) error {
	paymentsTools := mcptoolset.Config{Endpoint: "http://payments.internal/mcp"}
	// Asks the server's read-only charge_status tool whether a key was applied.
	paymentsStatus, err := mcpguard.StatusLookup(paymentsTools, "charge_status")
	if err != nil {
		return err
	}
	j, err := journal.Open(ctx, journal.Config{
		Backend: sqlite.Backend{Path: "/var/lib/agent/intents.db"},
		Lookups: map[string]journal.StatusLookup{"payments": paymentsStatus},
	})
	if err != nil {
		return err
	}
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, SideEffects: callbacks.SideEffects{
		MutatingTools: []string{"charge_card"},
		Retry:         retry.MustNew(retry.Config{Journal: j.ForRetry()}),
		Journal:       j,
	}})
	payments, err := mcpguard.New(mcpguard.Config{Dependency: "payments", Callbacks: guard, Toolset: paymentsTools})
	if err != nil {
		return err
	}
	defer payments.Close()
	report, err := j.Reconcile(ctx) // at start-up and periodically: asks charge_status about each UNKNOWN charge

	_ = report
	return err
}

// mcpServerPage is docs/mcp.md's status tool, on the server's side.
func mcpServerPage(server *mcp.Server, applied func(key string) bool) {
	type statusArgs struct {
		Key string `json:"idempotency_key"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "charge_status", Description: "Tells whether a charge was applied."},
		func(ctx context.Context, req *mcp.CallToolRequest, in statusArgs) (*mcp.CallToolResult, any, error) {
			if applied(in.Key) { // the keys the charges arrived with: req.Params.Meta[mcpguard.IdempotencyKeyMeta]
				return nil, map[string]any{"status": "applied"}, nil
			}
			return nil, map[string]any{"status": "not_applied"}, nil
		})
}
