package modelfailover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// A route at its adaptive limit is passed over like an open one: the call goes to the
// next route (the real genai client against local servers, counted there), and the
// primary's breaker learns nothing from the refusal. A Critical call finds room.
func TestRouteOverItsAdaptiveLimitFailsOverThroughTheRunner(t *testing.T) {
	t.Parallel()
	primary, backup := newRegion(t, "us-central1", pro), newRegion(t, "europe-west4", flash)
	clk := newTimerClock()
	deps, err := dependencymap.New(dependencymap.Config{Clock: clk, ModelDefault: testPolicy, Models: []dependencymap.ModelEndpoint{
		{Model: pro, Region: "us-central1", Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 5}},
	}})
	require.NoError(t, err)
	f, err := modelfailover.New(modelfailover.Config{Routes: []modelfailover.Route{primary.route(), backup.route()},
		Breakers: deps, Clock: clk, Logger: discardLogger()})
	require.NoError(t, err)
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	turn := func(ctx context.Context) string {
		var out string
		for ev, err := range r.Run(ctx, "u", newSession(), genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
			require.NoError(t, err)
			if ev.Content != nil && !ev.Partial {
				out = text(ev.Content)
			}
		}
		return out
	}

	lim := deps.Limiter(dependencymap.ModelKey(pro, "us-central1"))
	require.NotNil(t, lim)
	for range 4 { // four calls of other turns in flight: Normal may fill 4 of 5
		_, err := lim.Acquire(throttle.Critical)
		require.NoError(t, err)
	}
	require.Equal(t, "answer from europe-west4", turn(context.Background()))
	require.Zero(t, primary.requests(), "the limited route was not called")
	require.Equal(t, 1, backup.requests())
	b, _ := deps.Get(dependencymap.ModelKey(pro, "us-central1"))
	require.Equal(t, breaker.Closed, b.State())
	require.Zero(t, b.Snapshot().Window.Calls, "a refusal is not the route's failure")
	require.Equal(t, uint64(1), lim.Refused(throttle.Normal))

	ctx := throttle.WithPriority(context.Background(), throttle.Critical)
	require.Equal(t, "answer from us-central1", turn(ctx))
	require.Equal(t, 1, primary.requests())
	require.Equal(t, 4, lim.InFlight(), "the admitted call gave its place back")
	require.EqualValues(t, 1, b.Snapshot().Window.Calls, "an admitted call is measured as today")
}

// The same for an agent that keeps its own model and uses the Failover's callbacks:
// at its limit the primary is passed over in BeforeModel and the backup's own LLM
// answers; a Critical call is sent by the agent's own model, and its place is given
// back when AfterModel sees the answer.
func TestRouteOverItsAdaptiveLimitInTheCallbacksThroughTheRunner(t *testing.T) {
	t.Parallel()
	primary, backup := newRegion(t, "us-central1", pro), newRegion(t, "europe-west4", flash)
	var deps *dependencymap.Map
	h := newHarness(t, harnessConfig{regions: []*region{primary, backup},
		agentModelFor: func(f *modelfailover.Failover) model.LLM { return primary.llmThrough(t, f) },
		routes:        []modelfailover.Route{{Model: pro, Region: primary.name}, backup.route()},
		mutate: func(cfg *modelfailover.Config) {
			var err error
			deps, err = dependencymap.New(dependencymap.Config{Clock: cfg.Clock, ModelDefault: testPolicy, Models: []dependencymap.ModelEndpoint{
				{Model: pro, Region: "us-central1", Adaptive: &adaptivelimit.Config{MinLimit: 1, InitialLimit: 5}},
			}})
			require.NoError(t, err)
			cfg.Breakers = deps
		}})
	lim := deps.Limiter(dependencymap.ModelKey(pro, "us-central1"))
	require.NotNil(t, lim)
	for range 4 {
		_, err := lim.Acquire(throttle.Critical)
		require.NoError(t, err)
	}
	res := h.turn(context.Background(), newSession(), false)
	require.NoError(t, res.err)
	require.Equal(t, []string{"answer from europe-west4"}, res.finals)
	require.Zero(t, primary.requests())
	require.Equal(t, 1, backup.requests())
	b, _ := deps.Get(dependencymap.ModelKey(pro, "us-central1"))
	require.Zero(t, b.Snapshot().Window.Calls, "a refusal is not the route's failure")

	res = h.turn(throttle.WithPriority(context.Background(), throttle.Critical), newSession(), false)
	require.NoError(t, res.err)
	require.Equal(t, []string{"answer from us-central1"}, res.finals)
	require.Equal(t, 1, primary.requests())
	require.Equal(t, 4, lim.InFlight(), "AfterModel gave the place back")
	require.EqualValues(t, 1, b.Snapshot().Window.Calls)
}
