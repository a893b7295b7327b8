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
	token     string // the admin page's token
	gemini    func(wrap func(http.RoundTripper) http.RoundTripper) *genai.ClientConfig
	openai    openaimodel.ClientConfig
	// driveProbes: the caller runs the prober's ProbeDue itself (the offline story,
	// on its fake clock) instead of the prober's own Run loop.
	driveProbes bool
	onBreaker   func(breaker.Event)
	onFailover  func(modelfailover.Event)
	onProbe     func(probe.Result)
}

// app is the wired agent: turns run under the turn deadline, and ops serves
// /metrics and /admin/ on one port.
type app struct {
	turn     *tooltimeout.Turn
	sessions session.Service
	ops      http.Handler
	prober   *probe.Prober
	close    func()
}

// wire builds the agent and puts agentbreaker around it. The lines between the
// "wiring:" markers are all of agentbreaker's wiring: 40 lines, counted by
// TestWiringFitsInFortyLines (blank and comment lines do not count).
func wire(ctx context.Context, s settings, lookup, note tool.Tool, crm crmClient) (*app, error) {
	// wiring: begin
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: s.log, Clock: s.clock})
	history := admin.MustNewHistory(admin.HistoryConfig{})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: s.clock, Default: s.policy, ModelDefault: s.policy,
		OnStateChange: []func(breaker.Event){history.Record, s.onBreaker},
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"crm_lookup", "crm_add_note"},
			Probe: &dependencymap.Probe{URL: s.crmURL + "/health"}}}})
	j, err := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: filepath.Join(s.dataDir, "intents.db")},
		Lookups: map[string]journal.StatusLookup{"crm": crm.status}, Clock: s.clock, Logger: s.log})
	if err != nil {
		return nil, err
	}
	if _, err := j.Reconcile(ctx); err != nil { // settle what a crash left open
		return nil, err
	}
	r := retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: s.clock})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: s.clock,
		SideEffects:   callbacks.SideEffects{MutatingTools: []string{"crm_add_note"}, Retry: r, Journal: j},
		Observability: callbacks.Observability{Logger: s.log, Observer: tel}})
	timeout := tooltimeout.Config{Timeout: 10 * time.Second, OnAbandon: tel.ToolAbandoned}
	tools := []tool.Tool{tooltimeout.MustWrap(lookup, timeout), guard.MustWithIdempotencyKey(tooltimeout.MustWrap(note, timeout))}
	gem, err := gemini.NewModel(ctx, "gemini-2.5-flash", s.gemini(modelfailover.NewTransport))
	if err != nil {
		return nil, err
	}
	failover := modelfailover.MustNew(modelfailover.Config{Breakers: deps, Clock: s.clock, Logger: s.log, OnFailover: s.onFailover,
		Routes: []modelfailover.Route{{Model: "gemini-2.5-flash", Region: "gemini", LLM: gem},
			{Model: "gpt-4.1-mini", Region: "openai", LLM: openairoute.MustNew(ctx, openairoute.Config{Model: "gpt-4.1-mini", Client: s.openai})}}})
	prober, err := probe.FromMap(deps, probe.Config{Logger: s.log, OnResult: []func(probe.Result){s.onProbe}})
	if err != nil {
		return nil, err
	}
	if !s.driveProbes {
		go prober.Run(ctx) //nolint:errcheck // it returns when ctx ends
	}
	parts := telemetry.Parts{Dependencies: deps, Failover: failover, Journal: j, Retrier: r}
	var fl *fleet.Fleet
	if s.redisAddr != "" {
		fl = fleet.MustNew(fleet.Config{Addr: s.redisAddr, App: appName})
		if err := fl.AttachMap(deps); err != nil {
			return nil, err
		}
		parts.Fleet = fl
	} else {
		s.log.Info("fleet mode off: REDIS_ADDR is not set, breakers decide per process")
	}
	tel.Wire(parts)
	adminCfg := admin.Config{Token: s.token, Breakers: deps, History: history, Routes: admin.FailoverRoutes(failover),
		Journal: admin.JournalOf(j), Logger: s.log, Clock: s.clock}
	if fl != nil {
		adminCfg.Scopes = fl
	}
	h, err := admin.New(adminCfg)
	if err != nil {
		return nil, err
	}
	ops := http.NewServeMux()
	ops.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ops.Handle("/admin/", http.StripPrefix("/admin", h))
	plugins := runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}}
	// wiring: end
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: failover, Tools: tools, Mode: llmagent.ModeChat,
		Instruction: "Answer questions about customers with the CRM tools."})
	if err != nil {
		return nil, err
	}
	sessions := session.InMemoryService()
	rn, err := runner.New(runner.Config{AppName: appName, Agent: root, SessionService: sessions, PluginConfig: plugins})
	if err != nil {
		return nil, err
	}
	// wiring: begin
	turn, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{Runner: rn, Timeout: time.Minute, Sessions: sessions,
		AppName: appName, MutatingTools: []string{"crm_add_note"}, DependencyOf: deps.DependencyOf, Tools: tools})
	// wiring: end
	if err != nil {
		return nil, err
	}
	return &app{turn: turn, sessions: sessions, ops: ops, prober: prober, close: func() {
		prober.Close()
		if fl != nil {
			_ = fl.Close()
		}
		_ = j.Close()
	}}, nil
}
