package hops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
)

func subAgentModel() *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, Steps: []breakertest.Step{
		breakertest.Call("crm_lookup", map[string]any{"query": "customer 42"}),
		breakertest.Text("I could not reach the CRM."),
	}})
}

// budgetTurn runs one turn in which two sub-agents called as tools each look up the
// same customer and the root model re-issues the first one, against a dead CRM. It
// returns the requests that reached the CRM and the inner models.
func budgetTurn(t *testing.T, withRetry bool) (int64, []*breakertest.Model) {
	t.Helper()
	ctx := context.Background()
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(503))
	clk := newClock()
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"crm_lookup"}, Policy: crmPolicy(100)}, // the tools, never the agent tools
	}})
	cfg := callbacks.Config{Dependencies: deps, Clock: clk}
	if withRetry {
		cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: clk})
	}
	guard := callbacks.MustNew(cfg)
	lookup := crmTool(t, "crm_lookup", srv.URL)
	ma, mb := subAgentModel(), subAgentModel()
	req := map[string]any{"request": "find customer 42"}
	root := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{
		breakertest.Call("crm_agent_a", req),
		breakertest.Call("crm_agent_b", req),
		breakertest.Call("crm_agent_a", req), // the root model re-issues the first sub-agent
		breakertest.Text("Sorry, the CRM is down."),
	}})
	sub := func(name string, m model.LLM) callbacks.AgentToolNode {
		return callbacks.AgentToolNode{Node: callbacks.Node{Config: llmagent.Config{
			Name: name, Description: "Answers CRM questions.", Model: m, Tools: []tool.Tool{lookup},
		}}}
	}
	ag, err := guard.Build(callbacks.Node{
		Config:     llmagent.Config{Name: "assistant", Model: root},
		AgentTools: []callbacks.AgentToolNode{sub("crm_agent_a", ma), sub("crm_agent_b", mb)},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin{guard.Plugin()}})
	turn := runTurn(t, h, ctx, "who is customer 42?")
	if got := turn.FinalText(); got != "Sorry, the CRM is down." {
		t.Fatalf("final text %q: the turn did not run to its end", got)
	}
	return srv.Requests(), []*breakertest.Model{ma, mb, root}
}

// docs/side-effects.md, "One budget across hops": "The same tool with the same
// arguments, called by two sub-agents, or by one sub-agent again when the root model
// re-issues it, is one operation: its first call is the first attempt and every later
// one a retry of the inner dependency, charged to that dependency's budget (and
// refused, with the budget-exhausted payload, when it is spent)"; "So a turn sends its
// first attempts and at most the budget's share beyond them". The budget's share on a
// quiet dependency is one retry per 10 s window (retry.BudgetConfig defaults).
func TestOneBudgetAcrossAgentToolHops(t *testing.T) {
	plain, _ := budgetTurn(t, false)
	if plain != 3 {
		t.Fatalf("without SideEffects.Retry the turn sent %d requests; the scenario expects 3 (one per sub-agent run)", plain)
	}
	sent, models := budgetTurn(t, true)
	// One operation: 1 first attempt + at most 1 retry from the budget.
	if sent > 2 {
		t.Fatalf("with SideEffects.Retry the turn sent %d requests to the dead CRM, want at most 2 "+
			"(the one operation's first attempt and the budget's one retry)", sent)
	}
	// What the refused call told a model: the budget-exhausted payload, either inside a
	// sub-agent (its inner call refused) or to the root (the re-issue refused before the
	// sub-agent ran).
	var refused []map[string]any
	for _, m := range models {
		for _, r := range m.Requests() {
			for _, fr := range r.FunctionResponses() {
				if rt, _ := fr.Response[payloads.KeyResponseType].(string); rt == payloads.TypeBudgetExhausted {
					refused = append(refused, fr.Response)
				}
			}
		}
	}
	if len(refused) == 0 {
		t.Fatalf("%d requests were sent and a call was held back, but no model saw a %s payload", sent, payloads.TypeBudgetExhausted)
	}
}

// docs/agents.md, "No oscillation": "If an agent tool is listed under a dependency its
// own tools use, it is made harmless: it is refused while that breaker is open, but it
// never takes the half-open probe (its inner call does, so the probe reaches the
// dependency), holds no bulkhead slot and never reports an outcome to that breaker";
// docs/tools.md: "closed while dead 0". The sub-agent answers in words every time, so an
// agent tool that reported its own outcome would close the breaker on a dead CRM.
func TestAgentToolListedUnderItsInnerDependencyNeverClosesTheBreaker(t *testing.T) {
	for _, withRetry := range []bool{false, true} {
		name := "plugin"
		if withRetry {
			name = "plugin+Retry"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv := breakertest.NewServer(t)
			srv.Set(breakertest.Status(503))
			clk := newClock()
			tr := &transitions{}
			deps := dependencymap.MustNew(dependencymap.Config{
				Clock:         clk,
				OnStateChange: []func(breaker.Event){tr.on},
				Dependencies: map[string]dependencymap.Dependency{
					"crm": {Tools: []string{"crm_lookup", "crm_agent"}, Policy: crmPolicy(4)},
				},
			})
			cfg := callbacks.Config{Dependencies: deps, Clock: clk, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 1}}}
			if withRetry {
				cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: clk})
			}
			guard := callbacks.MustNew(cfg)
			lookup := crmTool(t, "crm_lookup", srv.URL)
			root := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, DiscardRequests: true, Steps: []breakertest.Step{
				breakertest.Call("crm_agent", map[string]any{"request": "find customer 42"}),
				breakertest.Text("done"),
			}})
			inner := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, DiscardRequests: true, Steps: []breakertest.Step{
				breakertest.Call("crm_lookup", map[string]any{"query": "customer 42"}),
				breakertest.Text("The CRM did not answer."),
			}})
			ag, err := guard.Build(callbacks.Node{
				Config: llmagent.Config{Name: "assistant", Model: root},
				AgentTools: []callbacks.AgentToolNode{{Node: callbacks.Node{Config: llmagent.Config{
					Name: "crm_agent", Description: "Answers CRM questions.", Model: inner, Tools: []tool.Tool{lookup},
				}}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin{guard.Plugin()}})
			b := mustBreaker(t, deps, "crm")

			// 200 turns, one a second, the CRM dead throughout: 6 cooldowns of 30 s.
			busy, agentRefused := 0, 0
			for i := 0; i < 200; i++ {
				turn := runTurn(t, h, ctx, "who is customer 42?")
				for _, fr := range turn.FunctionResponses() {
					rt, _ := fr.Response[payloads.KeyResponseType].(string)
					if rt == payloads.TypeBusy {
						busy++
					}
					if fr.Name == "crm_agent" && rt == payloads.TypeUnavailable {
						agentRefused++
					}
				}
				clk.Advance(time.Second)
			}
			opened, closed := 0, 0
			for _, e := range tr.all() {
				switch e.To {
				case breaker.Open:
					opened++
				case breaker.Closed:
					closed++
				}
			}
			if opened == 0 {
				t.Fatalf("the breaker never opened over 200 turns against a dead CRM (%d requests)", srv.Requests())
			}
			if closed != 0 {
				t.Fatalf("the breaker closed %d times while the CRM was dead; transitions: %s", closed, describe(tr.all()))
			}
			if agentRefused == 0 {
				t.Errorf("the agent tool listed under crm was never refused while the crm breaker was open")
			}
			if busy != 0 {
				t.Errorf("%d calls got the busy payload with a bulkhead of 1: the agent tool held the slot its inner call needs", busy)
			}
			// Half-open probes reached the CRM: after the trip, requests kept arriving
			// about once per cooldown (the inner call is the probe).
			afterTrip := srv.Requests()
			srv.Set(breakertest.OK(`{"name":"Ada"}`))
			for i := 0; i < 40 && b.State() != breaker.Closed; i++ {
				runTurn(t, h, ctx, "who is customer 42?")
				clk.Advance(time.Second)
			}
			if b.State() != breaker.Closed {
				t.Fatalf("the CRM answered again for 40 turns (over a 30 s cooldown) and the breaker is %v: the probe never reached it", b.State())
			}
			if srv.Requests() == afterTrip {
				t.Fatal("the breaker closed without a request reaching the CRM")
			}
		})
	}
}

func describe(evs []breaker.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		sb.WriteString(e.From.String() + "->" + e.To.String() + " (" + e.Reason + "); ")
	}
	return sb.String()
}
