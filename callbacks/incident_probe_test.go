package callbacks_test

import (
	"context"
	"log/slog"
	"sync/atomic"
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
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestSeedIncidentWithAHealthProbe (issue 24f) replays the design document's incident
// (50% over a 20-call volume gate, 30 s cooldown) with a health probe every 30 s: once
// the breaker trips, no user call reaches the provider while it refuses calls, every
// request the provider sees is a health check, a mutation issued during the outage
// never reaches it, and the breaker closes within one probe interval of the recovery.
func TestSeedIncidentWithAHealthProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))
	var tr transitions
	server := breakertest.NewServer(t)
	health, err := probe.HTTPGet(probe.HTTPConfig{URL: server.URL + "/health"})
	require.NoError(t, err)
	var probes, closedAt atomic.Int64
	deps := dependencymap.MustNew(dependencymap.Config{
		Default: breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 20, Window: time.Minute, Cooldown: 30 * time.Second, Jitter: -1,
			CooldownMultiplier: 1},
		Dependencies: map[string]dependencymap.Dependency{
			"enrichment": {Tools: []string{"enrich_company", "update_company"},
				Probe: &dependencymap.Probe{Func: func(ctx context.Context) error { probes.Add(1); return health(ctx) }}},
		},
		MaxProbeInterval: 30 * time.Second,
		Clock:            clk,
		OnStateChange: []func(breaker.Event){tr.add, func(e breaker.Event) {
			if e.To == breaker.Closed {
				closedAt.Store(e.At.UnixNano())
			}
		}},
	})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, SideEffects: callbacks.SideEffects{MutatingTools: []string{"update_company"}}})
	prober, err := probe.FromMap(deps, probe.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer prober.Close()
	enrich, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "enrich_company", URL: server.URL})
	require.NoError(t, err)
	var updates atomic.Int64
	update, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "update_company", URL: server.URL + "/update"})
	require.NoError(t, err)
	harness := func(m *breakertest.Model) (*breakertest.Harness, string) {
		a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{enrich, update}})
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		return h, sid
	}
	reader, readerSession := harness(enrichmentModel())
	writer, writerSession := harness(breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		updates.Add(1)
		return breakertest.Call("update_company", map[string]any{"query": "acme"})
	}}))
	b, _ := deps.Get("enrichment")
	next := prober.ProbeDue(ctx)
	// advance moves the clock by d, running the prober exactly on its schedule on the way.
	advance := func(d time.Duration) {
		target := clk.Now().Add(d)
		for !next.After(target) {
			clk.Set(next)
			next = prober.ProbeDue(ctx)
		}
		clk.Set(target)
	}
	turn := func() *breakertest.Turn {
		t.Helper()
		res, err := reader.Run(ctx, readerSession, "Tell me about Acme.")
		require.NoError(t, err)
		advance(2 * time.Second)
		return res
	}
	userCalls := func() int64 { return server.Requests() - probes.Load() }

	clk.Set(time.Date(2026, 3, 1, 14, 2, 0, 0, time.UTC))
	next = prober.ProbeDue(ctx)
	for range 8 {
		require.Equal(t, "Acme is enriched.", turn().FinalText())
	}
	server.Set(breakertest.Status(503))
	for i := range 12 {
		if i%2 == 1 {
			server.Enqueue(breakertest.Drop())
		}
		turn()
	}
	require.Equal(t, breaker.Open, b.State(), "12 of 20 failed: the breaker trips as in the replay without a probe")
	require.Equal(t, int64(20), userCalls())
	require.Zero(t, probes.Load(), "nothing to probe while it was closed")
	openedAt := b.Snapshot().OpenedAt

	// The outage goes on until 14:11: turns every 2 s, a mutation every minute.
	recovery := time.Date(2026, 3, 1, 14, 11, 0, 0, time.UTC)
	for clk.Now().Before(recovery) {
		if clk.Now().Second() < 10 {
			res, err := writer.Run(ctx, writerSession, "Update Acme.")
			require.NoError(t, err)
			require.Equal(t, "unavailable", res.FunctionResponses()[0].Response["status"])
		}
		turn()
		advance(8 * time.Second) // a turn every 10 s: the replay stays quick
		require.NotEqual(t, breaker.Closed, b.State())
		require.Equal(t, int64(20), userCalls(), "at %s: no user call reaches the provider while the breaker refuses calls", clk.Now().Format("15:04:05"))
	}
	require.Equal(t, int64(20), userCalls())
	require.GreaterOrEqual(t, updates.Load(), int64(8), "mutations were issued during the outage")
	// Every request the provider saw during the outage was a health check, one per 30 s
	// from the trip on (the last one before the recovery at 14:10:4x).
	want := int64((recovery.Sub(openedAt) - 1) / (30 * time.Second))
	require.Equal(t, want, probes.Load(), "a health check every 30 s from %s", openedAt.Format("15:04:05"))

	server.Set(breakertest.OK(`{"employees": 42}`))
	for b.State() != breaker.Closed {
		turn()
		require.Less(t, clk.Now().Sub(recovery), 32*time.Second, "closed within one probe interval (and one turn) of the recovery")
	}
	require.LessOrEqual(t, time.Unix(0, closedAt.Load()).Sub(recovery), 30*time.Second, "closed within one probe interval")
	require.Equal(t, int64(20), userCalls(), "the breaker closed without a user call")
	require.Equal(t, "Acme is enriched.", turn().FinalText())
	require.Equal(t, int64(21), userCalls())
	trips := 0
	for _, s := range tr.get() {
		if s == "closed->open (failure_rate)" {
			trips++
		}
	}
	require.Equal(t, 1, trips, "one trip, one recovery")
	require.Equal(t, "half_open->closed (probe_succeeded)", tr.get()[len(tr.get())-1])
	require.Zero(t, cb.Stats().InFlight)
}
