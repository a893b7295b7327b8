package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
	"github.com/agentbreaker/agentbreaker/probe"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

const appName = "production"

// settings is what the program hands the wiring: the endpoints, where the journal
// lives, the admin token, and the hooks the offline story prints from. In a live run
// the hooks are nil and the clock is the system's.
type settings struct {
	clock     clock.Clock    // nil: the system clock
	policy    breaker.Policy // zero: the library's defaults
	log       *slog.Logger
	dataDir   string // the journal's directory
	crmURL    string
	redisAddr string // "": fleet mode off
	fleetApp  string // the fleet's App: every replica of this agent uses the same
	token     string // the admin page's token
	gemini    func(wrap func(http.RoundTripper) http.RoundTripper) *genai.ClientConfig
	openai    openaimodel.ClientConfig
	// probeSleep is the prober's wait between rounds: nil, a real timer; offline,
	// a wait for the end, since the story runs ProbeDue when it moves its fake clock.
	probeSleep func(ctx context.Context, d time.Duration) error
	onBreaker  []func(breaker.Event)
	onFailover func(modelfailover.Event)
	onProbe    []func(probe.Result)
}

// app is the wired agent: turns run under the turn deadline, and ops serves
// /metrics and /admin/ on one port.
type app struct {
	turn     *tooltimeout.Turn
	sessions session.Service
	ops      *http.ServeMux
	prober   *probe.Prober
	fleet    *fleet.Fleet // nil: fleet mode off (REDIS_ADDR not set)
	close    func()
}

// guarded is what the first part of the wiring builds: the tools behind the plugin.
type guarded struct {
	tel   *telemetry.Telemetry
	reg   *prometheus.Registry
	deps  *dependencymap.Map
	j     *journal.Journal
	r     *retry.Retrier
	guard *callbacks.Callbacks
	tools []tool.Tool
}

// agentbreaker's wiring in this program is the lines between "wiring: begin" and
// "wiring: end" below and the two marked "wiring: this line": every line a program
// without agentbreaker would not have, its error checks included (blank and comment
// lines not counted). TestWiringFitsInFortyLines counts them: 38. The rest is the
// program's own: its tools, its model client, its agent and runner, its listener.

// guardTools builds the dependency map, the journal, the retrier and the plugin, and
// wraps the tools.
func guardTools(ctx context.Context, s settings, lookup, note tool.Tool, crm crmClient) (*guarded, error) {
	// wiring: begin
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: s.log, Clock: s.clock})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: s.clock, Default: s.policy, ModelDefault: s.policy, OnStateChange: s.onBreaker,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup", "crm_add_note"},
			Probe: &dependencymap.Probe{URL: s.crmURL + "/health"}}}})
	j, err := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(s.dataDir, "intents.db")},
		Lookups: map[string]journal.StatusLookup{"crm": crm.status}, ReconcileOnOpen: true, Clock: s.clock, Logger: s.log})
	if err != nil {
		return nil, err
	}
	r := retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: s.clock})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: s.clock,
		SideEffects:   callbacks.SideEffects{MutatingTools: []string{"crm_add_note"}, Retry: r, Journal: j},
		Observability: callbacks.Observability{Logger: s.log, Observer: tel}})
	timeout := tooltimeout.Config{Timeout: 10 * time.Second}
	tools := []tool.Tool{tooltimeout.MustWrap(lookup, timeout), guard.MustWithIdempotencyKey(tooltimeout.MustWrap(note, timeout))}
	// wiring: end
	return &guarded{tel: tel, reg: reg, deps: deps, j: j, r: r, guard: guard, tools: tools}, nil
}

// wire builds the agent and puts agentbreaker around it. On error it closes what it
// had opened.
func wire(ctx context.Context, s settings, lookup, note tool.Tool, crm crmClient) (_ *app, err error) {
	g, err := guardTools(ctx, s, lookup, note, crm)
	if err != nil {
		return nil, err
	}
	a := &app{ops: http.NewServeMux()}
	a.close = func() {
		a.prober.Close()
		if a.fleet != nil {
			_ = a.fleet.Close()
		}
		_ = g.j.Close()
	}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	gem, err := gemini.NewModel(ctx, "gemini-2.5-flash", s.gemini(modelfailover.NewTransport)) // wiring: this line
	if err != nil {
		return nil, err
	}
	// wiring: begin
	failover := modelfailover.MustNew(modelfailover.Config{Breakers: g.deps, Clock: s.clock, Logger: s.log, OnFailover: s.onFailover,
		Routes: []modelfailover.Route{{Model: "gemini-2.5-flash", Region: "gemini", LLM: gem},
			{Model: "gpt-4.1-mini", Region: "openai", LLM: openairoute.MustNew(ctx, openairoute.Config{Model: "gpt-4.1-mini", Client: s.openai})}}})
	// wiring: end
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: failover, Tools: g.tools, Mode: llmagent.ModeChat,
		Instruction: "Answer questions about customers with the CRM tools."})
	if err != nil {
		return nil, err
	}
	a.sessions = session.InMemoryService()
	rn, err := runner.New(runner.Config{AppName: appName, Agent: root, SessionService: a.sessions,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{g.guard.Plugin()}}}) // wiring: this line
	if err != nil {
		return nil, err
	}
	// wiring: begin
	a.turn = tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: rn, Timeout: time.Minute, Sessions: a.sessions,
		AppName: appName, MutatingTools: []string{"crm_add_note"}, DependencyOf: g.deps.DependencyOf, Tools: g.tools})
	// wiring: end
	return a, operate(ctx, s, g, failover, a)
}

// operate starts the health probes and fleet mode, and mounts the metrics and the
// admin page on a.ops.
func operate(ctx context.Context, s settings, g *guarded, failover *modelfailover.Failover, a *app) (err error) {
	// wiring: begin
	a.prober, err = probe.Start(ctx, g.deps, probe.Config{Logger: s.log, Sleep: s.probeSleep, OnResult: s.onProbe})
	if err != nil {
		return err
	}
	if s.redisAddr != "" {
		a.fleet = fleet.MustNew(fleet.Config{Addr: s.redisAddr, App: s.fleetApp, Map: g.deps})
	}
	g.tel.Wire(telemetry.Parts{Dependencies: g.deps, Failover: failover, Journal: g.j, Retrier: g.r, Fleet: a.fleet, Tools: g.tools})
	h, err := admin.New(admin.Config{Token: s.token, Breakers: g.deps, Routes: admin.FailoverRoutes(failover),
		Journal: admin.JournalOf(g.j), Scopes: a.fleet, Logger: s.log})
	if err != nil {
		return err
	}
	a.ops.Handle("/metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{}))
	a.ops.Handle("/admin/", http.StripPrefix("/admin", h))
	// wiring: end
	return nil
}
