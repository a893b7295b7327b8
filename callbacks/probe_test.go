package callbacks_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestAProbedDependencyRecoversWithoutTraffic (issue 24a, 24c): the loop guard hides
// the tools of an open dependency; a health probe runs on its own schedule; no user
// call reaches the dependency while the breaker refuses calls, however late the model
// calls the hidden tool; the breaker closes at the first probe after the recovery,
// and the tool is offered again on the next turn.
func TestAProbedDependencyRecoversWithoutTraffic(t *testing.T) {
	t.Parallel()
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(503))
	var probes atomic.Int64
	health, err := probe.HTTPGet(probe.HTTPConfig{URL: srv.URL + "/health"})
	require.NoError(t, err)
	check := func(ctx context.Context) error { probes.Add(1); return health(ctx) }
	var callHidden atomic.Bool
	f := callbackstest.New(t, callbackstest.Config{
		Tools: []tool.Tool{httpLookup(t, srv)},
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"},
			Probe: &dependencymap.Probe{Func: check}}},
		Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{HideOpenTools: true}}},
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			if _, ok := r.Declaration("lookup"); ok || callHidden.Load() {
				return breakertest.Call("lookup", map[string]any{"query": "42"})
			}
			return breakertest.Text("the CRM is unavailable")
		},
	})
	p, err := probe.FromMap(f.Deps, probe.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer p.Close()
	b := f.Breaker(t, "crm")
	userCalls := func() int64 { return srv.Requests() - probes.Load() }

	for range 4 { // the outage: four failed calls trip the breaker
		f.Run(t, "look up 42")
	}
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, int64(4), userCalls())

	next := p.ProbeDue(t.Context())
	for i := range 5 { // five probe intervals of outage, and a turn in each
		f.Clock.Set(next)
		first := f.Model.Calls()
		f.Run(t, "look up 42")
		_, offered := f.Model.Requests()[first].Declaration("lookup")
		require.False(t, offered, "interval %d: hidden while the breaker refuses calls, cooldown over or not", i)
		callHidden.Store(true) // the model calls it anyway
		f.Run(t, "look up 42")
		callHidden.Store(false)
		require.Equal(t, int64(4), userCalls(), "no user call reaches the dependency while it is refused")
		next = p.ProbeDue(t.Context())
		require.Equal(t, int64(i+1), probes.Load())
		require.Equal(t, breaker.Open, b.State())
		require.Equal(t, 30*time.Second, next.Sub(f.Clock.Now()), "a fixed interval: no growth")
	}

	srv.Set(breakertest.OK("ok"))
	recovered := f.Clock.Now()
	f.Clock.Set(next)
	p.ProbeDue(t.Context())
	require.Equal(t, breaker.Closed, b.State(), "closed by the probe, with no user call")
	require.LessOrEqual(t, f.Clock.Now().Sub(recovered), 30*time.Second, "within one interval of the recovery")
	require.Equal(t, int64(4), userCalls())

	first := f.Model.Calls()
	turn := f.Run(t, "look up 42")
	_, offered := f.Model.Requests()[first].Declaration("lookup")
	require.True(t, offered, "offered again once the breaker closed")
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.Equal(t, int64(5), userCalls())
	f.RequireClean(t)
}
