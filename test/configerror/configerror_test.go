package configerror_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/docstrings"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/probe"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

// TestEveryConstructorReturnsConfigError calls every constructor of the module with
// one value its documentation calls invalid and checks that the error is an
// *agentbreaker.ConfigError naming the field and holding the value as given.
//
// Constructors left out, each taking nothing that can be invalid:
//   - breakertest.NewServer and StartServer, openaifake.New and geminifake.Start (a
//     failure only when no port opens), geminifake.NewGate, clock.NewFake,
//     retry.NewIdempotencyKey, modelfailover.NewTransport, admin.BulkheadGroup,
//     JournalOf and FailoverRoutes, httptransport.BulkheadOf (adapters of a value).
//
// Not constructors, so not here: depfile.Read (it reports a file's problems in the
// Document it returns, as Load does in its error), sim's Run functions (they check
// a Scenario, whose errors LoadScenario shows), throttle.ParsePriority.
//
// The MustNew and MustWrap forms panic with the error of their New and are not
// called here.
func TestEveryConstructorReturnsConfigError(t *testing.T) {
	deps := dependencymap.MustNew(dependencymap.Config{})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{})})
	const badYAML = "dependencies:\n  crm:\n    policy:\n      window: soon\n"
	depPath := filepath.Join(t.TempDir(), "deps.yaml")
	if err := os.WriteFile(depPath, []byte(badYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	scenarioPath := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(scenarioPath, []byte("turn_rate: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup", URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		call      func() error
		wantPkg   string
		wantField string
		wantValue any
		wantIs    error // a sentinel the error still unwraps to, if the package has one
	}{
		{
			name: "a2aguard.New",
			call: func() error {
				_, err := a2aguard.New(a2aguard.Config{Dependency: "billing", Callbacks: cb,
					Agent:   remoteagent.A2AConfig{Name: "billing-agent", AgentCard: &a2a.AgentCard{}},
					Timeout: 2 * time.Hour})
				return err
			},
			wantPkg: "a2aguard", wantField: "Config.Timeout", wantValue: 2 * time.Hour,
		},
		{
			name: "a2aguard.New, a name",
			call: func() error {
				_, err := a2aguard.New(a2aguard.Config{Dependency: "bill\ning", Callbacks: cb,
					Agent: remoteagent.A2AConfig{Name: "billing-agent", AgentCard: &a2a.AgentCard{}}})
				return err
			},
			wantPkg: "a2aguard", wantField: "Config.Dependency", wantValue: "bill\ning",
		},
		{
			name:    "adaptivelimit.New",
			call:    func() error { _, err := adaptivelimit.New(adaptivelimit.Config{MaxLimit: -1}); return err },
			wantPkg: "adaptivelimit", wantField: "MaxLimit", wantValue: -1,
		},
		{
			name: "admin.New",
			call: func() error {
				_, err := admin.New(admin.Config{Token: "d8Kq2Zp7Lw4Xv9Rt3Ym6Nb1Hc5Gf0Js8", Refresh: time.Millisecond})
				return err
			},
			wantPkg: "admin", wantField: "Refresh", wantValue: time.Millisecond, wantIs: admin.ErrConfig,
		},
		{
			name:    "admin.NewHistory",
			call:    func() error { _, err := admin.NewHistory(admin.HistoryConfig{PerBreaker: 1000}); return err },
			wantPkg: "admin", wantField: "HistoryConfig.PerBreaker", wantValue: 1000, wantIs: admin.ErrConfig,
		},
		{
			name:    "admission.New",
			call:    func() error { _, err := admission.New(admission.Config{}); return err },
			wantPkg: "admission", wantField: "Map", wantValue: "nil",
		},
		{
			name: "breaker.New",
			call: func() error {
				_, err := breaker.New(breaker.Config{Name: "crm", Policy: breaker.Policy{Window: -time.Second}})
				return err
			},
			wantPkg: "breaker", wantField: "Policy.Window", wantValue: -time.Second,
		},
		{
			name: "breakertest.NewHTTPTool",
			call: func() error {
				_, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup", URL: "http://[::1"})
				return err
			},
			wantPkg: "breakertest", wantField: "HTTPToolConfig.URL", wantValue: "http://[::1",
		},
		{
			name:    "breakertest.NewHarness",
			call:    func() error { _, err := breakertest.NewHarness(breakertest.HarnessConfig{}); return err },
			wantPkg: "breakertest", wantField: "HarnessConfig.Agent", wantValue: "nil",
		},
		{
			name: "breakertest.NewModel",
			call: func() error {
				_, err := breakertest.NewModel(breakertest.ModelConfig{Steps: []breakertest.Step{{}}})
				return err
			},
			wantPkg: "breakertest", wantField: "ModelConfig.Steps[0]", wantValue: breakertest.Step{},
		},
		{
			name: "geminifake.New",
			call: func() error {
				_, err := geminifake.New(geminifake.Config{Reply: geminifake.Reply{Fail: &geminifake.Failure{Code: 200}}})
				return err
			},
			wantPkg: "geminifake", wantField: "Config.Reply.Fail.Code", wantValue: 200, wantIs: geminifake.ErrInvalid,
		},
		{
			name:    "bulkhead.New",
			call:    func() error { _, err := bulkhead.New(bulkhead.Config{Name: "crm", Limit: 0}); return err },
			wantPkg: "bulkhead", wantField: "Config.Limit", wantValue: 0,
		},
		{
			name:    "bulkhead.NewGroup",
			call:    func() error { _, err := bulkhead.NewGroup(bulkhead.GroupConfig{Default: -1}); return err },
			wantPkg: "bulkhead", wantField: "GroupConfig.Default", wantValue: -1,
		},
		{
			name: "callbacks.New",
			call: func() error {
				_, err := callbacks.New(callbacks.Config{Dependencies: deps, IdleInvocationTimeout: time.Second})
				return err
			},
			wantPkg: "callbacks", wantField: "Config.IdleInvocationTimeout", wantValue: time.Second,
		},
		{
			name:    "classify.New",
			call:    func() error { _, err := classify.New(classify.Config{Rules: []classify.Rule{nil}}); return err },
			wantPkg: "classify", wantField: "Config.Rules[0]", wantValue: "nil", wantIs: classify.ErrNilRule,
		},
		{
			name: "dependencymap.New",
			call: func() error {
				_, err := dependencymap.New(dependencymap.Config{MaxProbeInterval: time.Millisecond})
				return err
			},
			wantPkg: "dependencymap", wantField: "MaxProbeInterval", wantValue: time.Millisecond,
		},
		{
			name: "dependencymap.New, a dependency's policy",
			call: func() error {
				_, err := dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
					"crm": {Policy: breaker.Policy{Window: 2 * time.Hour}}}})
				return err
			},
			wantPkg: "dependencymap", wantField: `Dependencies["crm"].Policy.Window`, wantValue: 2 * time.Hour,
		},
		{
			name:    "depfile.Load",
			call:    func() error { _, err := depfile.Load(depPath); return err },
			wantPkg: "depfile", wantField: "dependencies.crm.policy.window", wantValue: "soon",
		},
		{
			name:    "depfile.ParseYAML",
			call:    func() error { _, err := depfile.ParseYAML([]byte(badYAML)); return err },
			wantPkg: "depfile", wantField: "dependencies.crm.policy.window", wantValue: "soon",
		},
		{
			name: "depfile.ParseJSON",
			call: func() error {
				_, err := depfile.ParseJSON([]byte(`{"dependencies": {"crm": {"policy": {"window": "soon"}}}}`))
				return err
			},
			wantPkg: "depfile", wantField: "dependencies.crm.policy.window", wantValue: "soon",
		},
		{
			name:    "docstrings.New",
			call:    func() error { _, err := docstrings.New(docstrings.Config{Sentence: "  "}); return err },
			wantPkg: "docstrings", wantField: "Config.Sentence", wantValue: "  ", wantIs: docstrings.ErrEmptySentence,
		},
		{
			name:    "fleet.New",
			call:    func() error { _, err := fleet.New(fleet.Config{Addr: "127.0.0.1:1", App: "a", DB: -1}); return err },
			wantPkg: "fleet", wantField: "DB", wantValue: -1,
		},
		{
			name:    "httptransport.New",
			call:    func() error { _, err := httptransport.New(httptransport.Config{Timeout: -time.Second}); return err },
			wantPkg: "httptransport", wantField: "Timeout", wantValue: -time.Second,
		},
		{
			name:    "journal.Open",
			call:    func() error { _, err := journal.Open(context.Background(), journal.Config{}); return err },
			wantPkg: "journal", wantField: "Backend", wantValue: "nil",
		},
		{
			name: "journal.Open with sqlite.Backend",
			call: func() error {
				_, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: "a?b"}})
				return err
			},
			wantPkg: "journal/sqlite", wantField: "Backend.Path", wantValue: "a?b",
		},
		{
			name: "journal.Open with postgres.Backend",
			call: func() error {
				_, err := journal.Open(context.Background(), journal.Config{Backend: postgres.Backend{MaxConns: -1, DSN: "postgres://x"}})
				return err
			},
			wantPkg: "journal/postgres", wantField: "Backend.MaxConns", wantValue: -1,
		},
		{
			name:    "loopguard.New",
			call:    func() error { _, err := loopguard.New(loopguard.Config{FirmAfter: -1}); return err },
			wantPkg: "loopguard", wantField: "Config.FirmAfter", wantValue: -1,
		},
		{
			name: "mcpguard.New",
			call: func() error {
				_, err := mcpguard.New(mcpguard.Config{Dependency: "payments", Callbacks: cb,
					Toolset: mcptoolset.Config{Endpoint: "http://127.0.0.1:1"}, ListTimeout: 2 * time.Hour})
				return err
			},
			wantPkg: "mcpguard", wantField: "Config.ListTimeout", wantValue: 2 * time.Hour,
		},
		{
			name: "mcpguard.StatusLookup",
			call: func() error {
				_, err := mcpguard.StatusLookup(mcptoolset.Config{Endpoint: "http://127.0.0.1:1"}, "")
				return err
			},
			wantPkg: "mcpguard", wantField: "StatusLookup tool", wantValue: "",
		},
		{
			name: "modelfailover.New",
			call: func() error {
				_, err := modelfailover.New(modelfailover.Config{
					Routes: []modelfailover.Route{{Model: "m"}}, ShareWindow: 30 * time.Second})
				return err
			},
			wantPkg: "modelfailover", wantField: "ShareWindow", wantValue: 30 * time.Second, wantIs: modelfailover.ErrInvalidConfig,
		},
		{
			name:    "openairoute.New",
			call:    func() error { _, err := openairoute.New(context.Background(), openairoute.Config{}); return err },
			wantPkg: "openairoute", wantField: "Config.Model", wantValue: "", wantIs: openairoute.ErrNoModel,
		},
		{
			name: "payloads.NewCache",
			call: func() error {
				_, err := payloads.NewCache(payloads.CacheConfig{Tools: []string{"lookup"}, TTL: 48 * time.Hour})
				return err
			},
			wantPkg: "payloads", wantField: "CacheConfig.TTL", wantValue: 48 * time.Hour,
		},
		{
			name:    "probe.New",
			call:    func() error { _, err := probe.New(probe.Config{}); return err },
			wantPkg: "probe", wantField: "Checks", wantValue: []probe.Check(nil),
		},
		{
			name: "probe.FromMap",
			call: func() error {
				_, err := probe.FromMap(deps, probe.Config{Checks: []probe.Check{{}}, MaxInterval: time.Millisecond})
				return err
			},
			wantPkg: "probe", wantField: "MaxInterval", wantValue: time.Millisecond,
		},
		{
			name:    "probe.HTTPGet",
			call:    func() error { _, err := probe.HTTPGet(probe.HTTPConfig{URL: "ftp://crm"}); return err },
			wantPkg: "probe", wantField: "HTTPConfig.URL", wantValue: "ftp://crm",
		},
		{
			name:    "redact.New",
			call:    func() error { _, err := redact.New(redact.Config{ExcerptLen: 1}); return err },
			wantPkg: "redact", wantField: "Config.ExcerptLen", wantValue: 1,
		},
		{
			name:    "retry.New",
			call:    func() error { _, err := retry.New(retry.Config{Policy: retry.Policy{MaxAttempts: 101}}); return err },
			wantPkg: "retry", wantField: "Policy.MaxAttempts", wantValue: 101,
		},
		{
			name:    "retry.NewBudget",
			call:    func() error { _, err := retry.NewBudget(retry.BudgetConfig{Ratio: 2}); return err },
			wantPkg: "retry", wantField: "Budget.Ratio", wantValue: 2.0,
		},
		{
			name:    "retry.NewBudgets",
			call:    func() error { _, err := retry.NewBudgets(retry.BudgetConfig{Ratio: 2}); return err },
			wantPkg: "retry", wantField: "Budget.Ratio", wantValue: 2.0,
		},
		{
			name:    "sim.ParseScenario",
			call:    func() error { _, err := sim.ParseScenario([]byte("turn_rate: -1\n")); return err },
			wantPkg: "sim", wantField: "turn_rate", wantValue: -1.0,
		},
		{
			name:    "sim.LoadScenario",
			call:    func() error { _, err := sim.LoadScenario(scenarioPath); return err },
			wantPkg: "sim", wantField: "turn_rate", wantValue: -1.0,
		},
		{
			name:    "telemetry.New",
			call:    func() error { _, err := telemetry.New(telemetry.Config{}); return err },
			wantPkg: "telemetry", wantField: "Registerer", wantValue: "nil", wantIs: telemetry.ErrConfig,
		},
		{
			name:    "otelmetrics.New",
			call:    func() error { _, err := otelmetrics.New(otelmetrics.Config{}); return err },
			wantPkg: "otelmetrics", wantField: "MeterProvider", wantValue: "nil", wantIs: otelmetrics.ErrConfig,
		},
		{
			name:    "throttle.New",
			call:    func() error { _, err := throttle.New(throttle.Config{K: 0.5}); return err },
			wantPkg: "throttle", wantField: "K", wantValue: 0.5,
		},
		{
			name: "tooltimeout.Wrap",
			call: func() error {
				_, err := tooltimeout.Wrap(lookup, tooltimeout.Config{Timeout: -time.Second})
				return err
			},
			wantPkg: "tooltimeout", wantField: "Config.Timeout", wantValue: -time.Second,
		},
		{
			name:    "tooltimeout.NewTurn",
			call:    func() error { _, err := tooltimeout.NewTurn(tooltimeout.TurnConfig{}); return err },
			wantPkg: "tooltimeout", wantField: "TurnConfig.Runner", wantValue: "nil",
		},
		{
			name: "workflowguard.New",
			call: func() error {
				_, err := workflowguard.New(workflowguard.Config{Callbacks: cb, Tool: lookup, Timeout: -time.Second})
				return err
			},
			wantPkg: "workflowguard", wantField: "Timeout", wantValue: -time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ce *agentbreaker.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want an *agentbreaker.ConfigError", err, err)
			}
			if ce.Package != tt.wantPkg || ce.Field != tt.wantField || !reflect.DeepEqual(ce.Value, tt.wantValue) {
				t.Errorf("ConfigError{Package: %q, Field: %q, Value: %#v}, want {%q, %q, %#v}",
					ce.Package, ce.Field, ce.Value, tt.wantPkg, tt.wantField, tt.wantValue)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false, want true", tt.wantIs)
			}
		})
	}
}
