// Package shadow_test checks shadow mode from the outside (issue 45 a), through
// adk-go's runner with a scripted model: a dependency whose policy says Shadow sends
// every call its breaker, hold and bulkhead would have refused, and reports each as a
// would_refuse Event, a log record and agentbreaker_shadow_refusals_total; its
// breaker moves as an enforcing one would, and turning shadow off keeps that state.
package shadow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// policy would open the breaker at half of five calls failing, for 30 s.
var policy = breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 5, Window: time.Minute,
	Cooldown: 30 * time.Second, CooldownMultiplier: 1, Jitter: -1}

type events struct {
	mu sync.Mutex
	ev []callbacks.Event
}

func (e *events) add(ev callbacks.Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }

func (e *events) count(k callbacks.EventKind, control string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.ev {
		if ev.Kind == k && (control == "" || ev.WouldRefuse == control) {
			n++
		}
	}
	return n
}

type rig struct {
	clk  *clock.Fake
	deps *dependencymap.Map
	cfg  dependencymap.Config
	srv  *breakertest.Server
	h    *breakertest.Harness
	reg  *prometheus.Registry
	ev   *events
	logs *bytes.Buffer
}

func newRig(t *testing.T, p breaker.Policy) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC)), srv: breakertest.NewServer(t),
		reg: prometheus.NewRegistry(), ev: &events{}, logs: &bytes.Buffer{}}
	r.cfg = dependencymap.Config{Clock: r.clk,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}, Policy: p}}}
	r.deps = dependencymap.MustNew(r.cfg)
	tel := telemetry.MustNew(telemetry.Config{Registerer: r.reg})
	tel.Wire(telemetry.Parts{Dependencies: r.deps})
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup_customer", URL: r.srv.URL})
	require.NoError(t, err)
	cb := callbacks.MustNew(callbacks.Config{Dependencies: r.deps, Clock: r.clk, Observability: callbacks.Observability{
		Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: r.logs}, nil)), OnEvent: r.ev.add, Observer: tel}})
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
		if frs := req.FunctionResponses(); len(frs) > 0 {
			b, _ := json.Marshal(frs[len(frs)-1].Response)
			return breakertest.Text("answer: " + string(b))
		}
		return breakertest.Call("lookup_customer", map[string]any{"query": "ACME-42"})
	}})
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: m, Tools: []tool.Tool{lookup}})
	require.NoError(t, err)
	r.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
	return r
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (r *rig) turn(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sid, err := r.h.NewSession(ctx)
	require.NoError(t, err)
	turn, err := r.h.Run(ctx, sid, "Who is ACME-42?")
	require.NoError(t, err)
	return turn.FinalText()
}

func (r *rig) breaker(t *testing.T) *breaker.Breaker {
	t.Helper()
	b, ok := r.deps.Get("crm")
	require.True(t, ok)
	return b
}

func (r *rig) shadowCount(t *testing.T, control string) float64 {
	return sum(t, r.reg, "agentbreaker_shadow_refusals_total", map[string]string{"dependency": "crm", "control": control})
}

// sum adds the values of a counter family's series whose labels include labels; 0
// when the family has no such series.
func sum(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && have[k] == v
			}
			if match {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestShadowSendsEveryCallAndSaysWhatItWouldHaveRefused: a dead CRM behind a shadow
// policy. The breaker trips as an enforcing one would, yet every turn's call reaches
// the server and the model hears the server's own answer; each call the open breaker
// would have refused is a would_refuse Event, record and count, and none is a
// short-circuit. Switched to enforcing while it runs, the breaker stays open and
// refuses the next call.
func TestShadowSendsEveryCallAndSaysWhatItWouldHaveRefused(t *testing.T) {
	t.Parallel()
	p := policy
	p.Shadow = true
	r := newRig(t, p)
	r.srv.Set(breakertest.Status(503))
	const turns = 12
	for i := range turns {
		text := r.turn(t)
		require.NotContains(t, text, "unavailable", "turn %d: in shadow mode the model hears the dependency", i+1)
	}
	require.EqualValues(t, turns, r.srv.Requests(), "every call was sent")
	b := r.breaker(t)
	require.Equal(t, breaker.Open, b.State(), "the breaker moved as an enforcing one would")
	would := turns - int(policy.MinimumCalls)
	require.Equal(t, would, r.ev.count(callbacks.EventWouldRefuse, "breaker"))
	require.Zero(t, r.ev.count(callbacks.EventShortCircuit, ""), "no call was short-circuited")
	require.Equal(t, float64(would), r.shadowCount(t, "breaker"))
	require.Zero(t, sum(t, r.reg, "agentbreaker_short_circuits_total", map[string]string{"dependency": "crm"}))
	require.Equal(t, would, strings.Count(r.logs.String(), `"event":"would_refuse"`))
	require.Contains(t, r.logs.String(), `"would_tell":"unavailable"`)
	require.EqualValues(t, policy.MinimumCalls, b.Snapshot().Window.Calls,
		"the calls the breaker would have refused are not in its window")

	// Enforcing from here on, changed while the agent runs, keeps the state: the open
	// breaker refuses the next call.
	enforce := r.cfg
	enforce.Dependencies = map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}, Policy: policy}}
	require.NoError(t, r.deps.Apply(enforce))
	require.False(t, b.Shadow())
	require.Equal(t, breaker.Open, b.State())
	require.Contains(t, r.turn(t), "unavailable")
	require.EqualValues(t, turns, r.srv.Requests(), "the enforcing breaker sent nothing")
	require.Equal(t, 1, r.ev.count(callbacks.EventShortCircuit, ""))
}

// TestShadowHoldIsRecordedNotEnforced: a 429 with Retry-After holds an enforcing
// dependency; in shadow mode the next call inside the delay is sent and recorded as
// what the hold would have refused.
func TestShadowHoldIsRecordedNotEnforced(t *testing.T) {
	t.Parallel()
	p := policy
	p.Shadow = true
	p.MinimumCalls = 100
	r := newRig(t, p)
	r.srv.Set(breakertest.RetryAfter(429, 20))
	r.turn(t)
	r.clk.Advance(5 * time.Second)
	r.srv.Set(breakertest.OK(`{"name":"ACME"}`))
	require.Contains(t, r.turn(t), "ACME", "the held call was sent and answered")
	require.EqualValues(t, 2, r.srv.Requests())
	require.Equal(t, 1, r.ev.count(callbacks.EventWouldRefuse, "hold"))
	require.Equal(t, 1.0, r.shadowCount(t, "hold"))
}
