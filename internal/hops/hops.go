package hops

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Mode is how much of agentbreaker a run uses.
type Mode string

const (
	// None is adk-go alone: the tool loops three times, nothing is guarded.
	None Mode = "none"
	// Plugin is the plugin as the README installs it, with the same looping tool.
	Plugin Mode = "plugin"
	// Budget adds Config.SideEffects.Retry: one retry budget per dependency, and the
	// tool's own three tries go through the same Retrier (retry.Retrier.Do).
	Budget Mode = "budget"
)

// Modes are the modes in the order the figures show them.
var Modes = []Mode{None, Plugin, Budget}

// Config is one run.
type Config struct {
	Mode  Mode
	Turns int // defaults to 50
	// KeyCallers lists the callers (the agent tools) under the CRM's dependency
	// beside the inner tool, as Found 4 of issue 33 did.
	KeyCallers bool
	// RecoverAt is the turn (from 0) from which the CRM answers again. Defaults to 0:
	// it never does.
	RecoverAt int
}

// Figures are what one run measured.
type Figures struct {
	PerTurn []int64 // requests that reached the CRM in each turn
	Total   int64
	// RemotePerTurn and RemoteTotal count the requests that reached the remote agents'
	// A2A servers (the A2A shape; zero in the others).
	RemotePerTurn []int64
	RemoteTotal   int64
	Answered      int // turns that ended without an error from the runner
	// ClosedWhileDead counts the breaker's transitions to closed while the CRM
	// answered 503: each is a breaker closed on a dead dependency.
	ClosedWhileDead int
	Trips           int
	// ClosedAt is the first turn after RecoverAt that ended with the breaker closed
	// again, or -1.
	ClosedAt int
}

// World is what a shape builds on: the CRM, the clock, the dependency map and the
// plugin of one run.
type World struct {
	Mode    Mode
	CRM     *breakertest.Server
	Clock   *clock.Fake
	Deps    *dependencymap.Map
	CB      *callbacks.Callbacks // nil in None
	Retrier *retry.Retrier       // nil unless Budget
	Keyed   bool
	// Remote counts the requests that reach a shape's A2A servers.
	Remote atomic.Int64

	cleanups []func()
}

// OnClose registers f to run when the run ends (a shape's servers).
func (w *World) OnClose(f func()) { w.cleanups = append(w.cleanups, f) }

// Plugins returns the runner's plugins for the world's mode.
func (w *World) Plugins() []*plugin.Plugin {
	if w.CB == nil {
		return nil
	}
	return []*plugin.Plugin{w.CB.Plugin()}
}

// Shape builds the agent or graph of one shape and returns its runner harness.
type Shape struct {
	Name  string
	Build func(w *World) (*breakertest.Harness, error)
}

// Shapes are the shapes the figures show: plain tools, AgentTool, A2A (the two
// sub-agents are remote agents on A2A servers, guarded with a2aguard; a2a.go) and a
// workflow.
var Shapes = []Shape{toolsShape, agentToolShape, a2aShape, workflowShape}

// Start is when every run starts.
var Start = time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)

// Policy is the default policy, without jitter so that the figures repeat.
var Policy = breaker.Policy{Jitter: -1}

// Run runs one shape in one mode.
func Run(s Shape, cfg Config) (Figures, error) {
	if cfg.Turns == 0 {
		cfg.Turns = 50
	}
	crm := breakertest.StartServer()
	defer crm.Close()
	crm.Set(breakertest.Status(http.StatusServiceUnavailable))
	w := &World{Mode: cfg.Mode, CRM: crm, Clock: clock.NewFake(Start), Keyed: cfg.KeyCallers}
	var fig Figures
	var mu sync.Mutex
	tools := []string{"crm_lookup", "crm_lookup_contacts"}
	if cfg.KeyCallers {
		tools = append(tools, "crm_agent_a", "crm_agent_b")
	}
	deps, err := dependencymap.New(dependencymap.Config{
		Clock:   w.Clock,
		Default: Policy,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: tools},
		},
		OnStateChange: []func(breaker.Event){countTransitions(cfg, &fig, &mu)},
	})
	if err != nil {
		return fig, err
	}
	w.Deps = deps
	if err := w.guard(); err != nil {
		return fig, err
	}
	defer func() {
		for _, f := range slices.Backward(w.cleanups) {
			f()
		}
	}()
	h, err := s.Build(w)
	if err != nil {
		return fig, fmt.Errorf("%s: %w", s.Name, err)
	}
	if err := w.turns(h, cfg, &fig); err != nil {
		return fig, err
	}
	fig.Total = crm.Requests()
	fig.RemoteTotal = w.Remote.Load()
	mu.Lock()
	defer mu.Unlock()
	return fig, nil
}

// countTransitions returns the crm breaker's state-change listener for Run: it counts
// into fig, under mu, the breaker's trips and how often it closed while the CRM was
// still down.
func countTransitions(cfg Config, fig *Figures, mu *sync.Mutex) func(breaker.Event) {
	return func(e breaker.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Breaker != "crm" {
			return
		}
		dead := cfg.RecoverAt == 0 || e.At.Before(Start.Add(time.Duration(cfg.RecoverAt)*time.Second))
		switch e.To {
		case breaker.Closed:
			if dead {
				fig.ClosedWhileDead++
			}
		case breaker.Open:
			if e.From == breaker.Closed {
				fig.Trips++
			}
		}
	}
}

// guard sets up the world's mode over w.Deps: the callbacks plugin unless the mode is
// None, with a Retrier on a fake sleeper in Budget mode.
func (w *World) guard() error {
	if w.Mode == None {
		return nil
	}
	cc := callbacks.Config{Dependencies: w.Deps, Clock: w.Clock}
	var err error
	if w.Mode == Budget {
		w.Retrier, err = retry.New(retry.Config{Clock: w.Clock, Sleeper: &retry.FakeSleeper{},
			Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: w.Clock}), Rand: func() float64 { return 0.5 }})
		if err != nil {
			return err
		}
		cc.SideEffects.Retry = w.Retrier
	}
	w.CB, err = callbacks.New(cc)
	return err
}

// turns runs cfg.Turns turns of harness h, one a second from Start, the CRM recovering
// at cfg.RecoverAt, and records each turn's requests and the outcome in fig.
func (w *World) turns(h *breakertest.Harness, cfg Config, fig *Figures) error {
	ctx := context.Background()
	fig.ClosedAt = -1
	for i := range cfg.Turns {
		w.Clock.Set(Start.Add(time.Duration(i) * time.Second))
		if cfg.RecoverAt > 0 && i == cfg.RecoverAt {
			w.CRM.Set(breakertest.OK(`{"tier": "gold"}`))
		}
		before, remoteBefore := w.CRM.Requests(), w.Remote.Load()
		sid, err := h.NewSession(ctx)
		if err != nil {
			return err
		}
		if _, err := h.Run(ctx, sid, "Look up Acme in the CRM."); err == nil {
			fig.Answered++
		}
		fig.PerTurn = append(fig.PerTurn, w.CRM.Requests()-before)
		fig.RemotePerTurn = append(fig.RemotePerTurn, w.Remote.Load()-remoteBefore)
		if b, ok := w.Deps.Get("crm"); ok && cfg.RecoverAt > 0 && i >= cfg.RecoverAt && fig.ClosedAt < 0 && b.State() == breaker.Closed {
			fig.ClosedAt = i
		}
	}
	return nil
}

// LookupArgs are crm_lookup's arguments.
type LookupArgs struct {
	Customer string `json:"customer"`
}

// clientTries is how often the tool's HTTP client tries one lookup.
const clientTries = 3

// LookupTool is crm_lookup: a GET to the CRM that its client tries three times. In
// Budget mode the tries go through the plugin's Retrier, so the dependency's retry
// budget bounds them; otherwise it is the loop most tools have.
func (w *World) LookupTool() (tool.Tool, error) { return w.LookupToolNamed("crm_lookup") }

// LookupToolNamed is LookupTool under another name.
func (w *World) LookupToolNamed(name string) (tool.Tool, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(ctx context.Context) (map[string]any, classify.Classification, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.CRM.URL+"/customers/acme", nil)
		if err != nil {
			return nil, classify.Classification{}, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, classify.Classification{Outcome: classify.Unknown, Class: classify.ClassTransport, Verdict: classify.Counts, Retryable: true}, err
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			err := classify.StatusError(resp.StatusCode, 0, "")
			return nil, classify.Classify(classify.Input{Context: ctx, Err: err}), err
		}
		return map[string]any{"customer": "Acme", "tier": "gold"}, classify.Classification{Outcome: classify.Succeeded, Verdict: classify.Healthy}, nil
	}
	return functiontool.New(functiontool.Config{Name: name, Description: "Looks a customer up in the CRM."},
		func(ctx agent.Context, args LookupArgs) (map[string]any, error) {
			if w.Retrier == nil {
				var err error
				for range clientTries {
					var out map[string]any
					if out, _, err = get(ctx); err == nil {
						return out, nil
					}
				}
				return nil, err
			}
			var out map[string]any
			res := w.Retrier.Do(ctx, retry.Operation{Dependency: "crm", Tool: name + "/http", Args: map[string]any{"customer": args.Customer},
				Policy: retry.Policy{MaxAttempts: clientTries}},
				func(ctx context.Context, _ retry.Info) (classify.Classification, error) {
					o, c, err := get(ctx)
					out = o
					return c, err
				})
			if res.Err != nil {
				return nil, res.Err
			}
			if res.Outcome != classify.Succeeded {
				return nil, fmt.Errorf("crm: %s", res.Reason)
			}
			return out, nil
		})
}
