package callbacks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// enrichmentModel calls enrich_company once per turn and reacts to what comes back: a
// real answer ends the turn, an "unavailable" payload makes it try again (as models
// do), and a firm payload makes it answer without the tool.
func enrichmentModel() *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		rs := r.FunctionResponses()
		if len(rs) == 0 {
			return breakertest.Call("enrich_company", map[string]any{"query": "acme"})
		}
		p := rs[0].Response
		switch {
		case p["firm"] == true:
			return breakertest.Text("Live enrichment is down right now; continuing without it.")
		case p["status"] == "unavailable":
			return breakertest.Call("enrich_company", map[string]any{"query": "acme"}) // the model retries anyway
		case p["status"] == "ok":
			return breakertest.Text("Acme is enriched.")
		}
		return breakertest.Text("Enrichment failed this time.")
	}})
}

type transitions struct {
	mu  sync.Mutex
	all []string
}

func (tr *transitions) add(e breaker.Event) {
	tr.mu.Lock()
	tr.all = append(tr.all, fmt.Sprintf("%s->%s (%s)", e.From, e.To, e.Cause))
	tr.mu.Unlock()
}

func (tr *transitions) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.all...)
}

// TestSeedIncidentInMiniature replays the design document's incident: a partial outage
// of an enrichment API, a breaker with a 50% rate gate over a 20-call volume gate and a
// 30-second cooldown, probes that fail until the provider recovers. Time is a fake
// clock; the dependency is a real local HTTP server; the agent runs in adk-go's runner.
func TestSeedIncidentInMiniature(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))
	var tr transitions
	deps := dependencymap.MustNew(dependencymap.Config{
		Default: breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 20, Window: time.Minute, Cooldown: 30 * time.Second, Jitter: -1,
			CooldownMultiplier: 1}, // the document's fixed 30-second cool-down (tools now back off by default)
		Dependencies: map[string]dependencymap.Dependency{
			"enrichment": {Tools: []string{"enrich_company"}},
		},
		Clock:         clk,
		OnStateChange: []func(breaker.Event){tr.add},
	})
	var ev callbackstest.Events
	cb := callbacks.MustNew(callbacks.Config{
		Dependencies: deps, Clock: clk,
		Bulkheads: callbacks.Bulkheads{
			Limits: map[string]int{"enrichment": 20},
		},
		Observability: callbacks.Observability{
			OnEvent: ev.Add,
		},
	})
	server := breakertest.NewServer(t)
	enrich, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "enrich_company", URL: server.URL})
	require.NoError(t, err)
	m := enrichmentModel()
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{enrich}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	b, _ := deps.Get("enrichment")
	turn := func() *breakertest.Turn {
		t.Helper()
		res, err := h.Run(ctx, sid, "Tell me about Acme.")
		require.NoError(t, err)
		clk.Advance(2 * time.Second)
		return res
	}

	// 14:00 – healthy. 14:02 – the provider starts failing: 8 calls still succeed,
	// then the failures come, half as 503s and half as dropped connections.
	clk.Set(time.Date(2026, 3, 1, 14, 2, 0, 0, time.UTC))
	for range 8 {
		require.Equal(t, "Acme is enriched.", turn().FinalText())
	}
	// No Retry-After: a stated delay would hold the next turns (2 s apart) locally
	// (hold_test.go), and this replay is about the breaker's gates.
	server.Set(breakertest.Status(503))
	for i := range 11 {
		if i%2 == 1 {
			server.Enqueue(breakertest.Drop())
		}
		require.Equal(t, "Enrichment failed this time.", turn().FinalText())
	}
	// 11 failures of 19 calls is 58%, past the rate gate but short of the volume gate.
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, breaker.Counts{Calls: 19, Failures: 11}, b.Snapshot().Window)

	// The 20th call fails too: 12 of 20 is 60% over 20 calls. The breaker trips.
	turn()
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, int64(20), server.Requests())

	// The next turn: the model gets the payload, calls again anyway, gets the firm
	// message and answers without the tool. Nothing reaches the provider.
	res := turn()
	require.Equal(t, "Live enrichment is down right now; continuing without it.", res.FinalText())
	rs := res.FunctionResponses()
	require.Len(t, rs, 2)
	first, second := rs[0].Response, rs[1].Response
	require.Equal(t, payloads.TypeUnavailable, first["response_type"])
	require.Equal(t, "unavailable", first["status"])
	require.Equal(t, "enrichment", first["dependency"])
	require.Equal(t, false, first["retry_advised"])
	require.Equal(t, int64(28), first["retry_after_seconds"], "30s cooldown, 2s after the trip")
	require.NotContains(t, first, "firm")
	require.Equal(t, true, second["firm"])
	require.Equal(t, int64(20), server.Requests())
	require.Len(t, ev.Of(callbacks.EventLoopGuardFirm), 1)

	// 14:03:10 and every 30 seconds after: one probe each; the provider is still down.
	for range 2 {
		clk.Set(b.Snapshot().OpenedAt.Add(30 * time.Second))
		require.Equal(t, "Enrichment failed this time.", turn().FinalText(), "the probe reaches the provider and fails")
		require.Equal(t, breaker.Open, b.State())
	}
	require.Equal(t, int64(22), server.Requests())

	// 14:11 – the provider recovers; the next probe succeeds and the breaker closes.
	server.Set(breakertest.OK(`{"employees": 42}`))
	clk.Set(time.Date(2026, 3, 1, 14, 11, 0, 0, time.UTC))
	require.Equal(t, "Acme is enriched.", turn().FinalText())
	require.Equal(t, breaker.Closed, b.State())

	// The whole incident cost the provider exactly 23 requests.
	require.Equal(t, int64(23), server.Requests())
	require.Equal(t, []string{
		"closed->open (failure_rate)",
		"open->half_open (cooldown_elapsed)",
		"half_open->open (probe_failed)",
		"open->half_open (cooldown_elapsed)",
		"half_open->open (probe_failed)",
		"open->half_open (cooldown_elapsed)",
		"half_open->closed (probe_succeeded)",
	}, tr.get())
	s := cb.Stats()
	require.Zero(t, s.InFlight)
	require.Zero(t, s.Invocations)
	require.Zero(t, cb.Bulkheads().InUse())
}
