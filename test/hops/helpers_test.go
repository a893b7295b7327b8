// Package hops_test checks, from the outside, what docs/agents.md, docs/tools.md ("One
// turn, many hops") and docs/side-effects.md ("One budget across hops") promise about
// calls that leave an agent on more than one hop: workflow tool nodes and agent tools.
package hops_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"google.golang.org/adk/v2/agent"
	adkplugin "google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

// crmPolicy trips on the volume gate given, with a fixed cooldown and no jitter, so the
// numbers a test asserts follow from the documented rules alone.
func crmPolicy(minCalls int) breaker.Policy {
	return breaker.Policy{
		FailureRateThreshold: 0.5,
		MinimumCalls:         minCalls,
		Window:               time.Minute,
		Cooldown:             30 * time.Second,
		CooldownMultiplier:   1,
		Jitter:               -1,
	}
}

func newClock() *clock.Fake { return clock.NewFake(time.Time{}) }

// crmTool is a real function tool that GETs the counting server and reports a status
// of 400 or more as a classify.StatusError.
func crmTool(t *testing.T, name, url string) tool.Tool {
	t.Helper()
	tl, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: name, URL: url, TypedErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func runTurn(t *testing.T, h *breakertest.Harness, ctx context.Context, text string) *breakertest.Turn {
	t.Helper()
	sid, err := h.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.Run(ctx, sid, text)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return turn
}

// recorder is a workflow function node's body that keeps every input it was given.
type recorder struct {
	mu     sync.Mutex
	inputs []any
}

func (r *recorder) fn(_ agent.Context, in any) (any, error) {
	r.mu.Lock()
	r.inputs = append(r.inputs, in)
	r.mu.Unlock()
	return map[string]any{"done": true}, nil
}

func (r *recorder) got() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.inputs...)
}

// responseType returns the payload's response_type, or "" when v is not a map that has one.
func responseType(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	s, _ := m[payloads.KeyResponseType].(string)
	return s
}

// transitions records a breaker's state changes.
type transitions struct {
	mu  sync.Mutex
	evs []breaker.Event
}

func (tr *transitions) on(e breaker.Event) {
	tr.mu.Lock()
	tr.evs = append(tr.evs, e)
	tr.mu.Unlock()
}

func (tr *transitions) all() []breaker.Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]breaker.Event(nil), tr.evs...)
}

type plugin = adkplugin.Plugin

func mustBreaker(t *testing.T, deps *dependencymap.Map, key string) *breaker.Breaker {
	t.Helper()
	b, ok := deps.Get(key)
	if !ok {
		t.Fatalf("no breaker %q", key)
	}
	return b
}
