package modelfailover_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// The callbacks' signatures are exactly adk's, so they can go into an llmagent
// Config or a plugin as they are.
var (
	_ llmagent.BeforeModelCallback  = (*modelfailover.Failover)(nil).BeforeModel
	_ llmagent.AfterModelCallback   = (*modelfailover.Failover)(nil).AfterModel
	_ llmagent.OnModelErrorCallback = (*modelfailover.Failover)(nil).OnModelError
)

// An agent that keeps its own model: OnModelError answers from the fallback while
// the primary's breaker fills, BeforeModel goes straight to it once the breaker is
// open, and a probe brings traffic back.
func TestCallbacksFailOverForAnAgentsOwnModel(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}, agentModelFor: func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) },
		routes: []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}})
	ctx := t.Context()
	a.fail(t, geminifake.Failure{Code: 503})

	for i := range 2 {
		res := h.turn(ctx, newSession(), false)
		require.NoError(t, res.err)
		assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
		assert.Equal(t, routeB, res.last.CustomMetadata[modelfailover.MetaRoute])
		assert.Equal(t, []int{i + 1, i + 1}, h.counts())
	}
	require.Equal(t, breaker.Open, h.breaker(a).State())
	res := h.turn(ctx, newSession(), false)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
	assert.Equal(t, []int{2, 3}, h.counts(), "BeforeModel skips the open primary")

	a.server.Recover()
	h.clock.Advance(30 * time.Second)
	res = h.turn(ctx, newSession(), true)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"answer from us-central1", "answer from us-central1"}, append(res.partials, res.finals...))
	for _, m := range res.meta {
		assert.Equal(t, routeA, m[modelfailover.MetaRoute], "partials are marked too")
	}
	assert.Equal(t, []int{3, 3}, h.counts())
	assert.Equal(t, breaker.Closed, h.breaker(a).State())

	evs := h.events.failovers()
	require.Len(t, evs, 2)
	assert.Equal(t, [2]string{routeA, routeB}, [2]string{evs[0].From.Name, evs[0].To.Name})
	assert.Equal(t, modelfailover.Cause("http_5xx"), evs[0].Cause)
	assert.Equal(t, modelfailover.CauseProbeSucceeded, evs[1].Cause)
	assert.Zero(t, h.f.Pending())
}

// A route without an LLM is served by the primary's client under its own model
// name: a weaker model in the same region.
func TestRouteWithoutLLMSwitchesTheModelName(t *testing.T) {
	a := newRegion(t, "us-central1", pro)
	weaker := modelfailover.Route{Model: flash, Region: "us-central1"}
	flashCount := func() int { return a.server.RequestsFor(flash) }

	t.Run("failover model", func(t *testing.T) {
		h := newHarness(t, harnessConfig{regions: []*region{a}, routes: []modelfailover.Route{a.route(), weaker}})
		require.NoError(t, a.server.Enqueue(geminifake.Reply{Fail: &geminifake.Failure{Code: 503}}))
		res := h.turn(t.Context(), newSession(), false)
		require.NoError(t, res.err)
		assert.Equal(t, flash+"@us-central1", res.last.CustomMetadata[modelfailover.MetaRoute])
		assert.Equal(t, 1, a.requests())
		assert.Equal(t, 1, flashCount())
	})
	t.Run("callbacks", func(t *testing.T) {
		h := newHarness(t, harnessConfig{regions: []*region{a}, agentModelFor: func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) },
			routes: []modelfailover.Route{{Model: pro, Region: a.name}, weaker}})
		pros, flashes := a.requests(), flashCount()
		// While the primary's breaker is closed, a failure cannot be answered by
		// the agent's own model from inside OnModelError: the error stands.
		for i := range 2 {
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Fail: &geminifake.Failure{Code: 503}}))
			res := h.turn(t.Context(), newSession(), false)
			require.Error(t, res.err)
			assert.Equal(t, pros+i+1, a.requests())
		}
		require.Equal(t, breaker.Open, h.breaker(a).State())
		res := h.turn(t.Context(), newSession(), false)
		require.NoError(t, res.err)
		assert.Equal(t, []string{"answer from us-central1"}, res.finals)
		assert.Equal(t, flash+"@us-central1", res.last.CustomMetadata[modelfailover.MetaRoute])
		assert.Equal(t, pros+2, a.requests())
		assert.Equal(t, flashes+1, flashCount(), "BeforeModel put the weaker model's name on the request")
	})
}

// The failover model and the callbacks of one Failover share its breakers: an
// outage seen by one agent steers the other.
func TestModelAndCallbacksShareBreakers(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}})
	a.fail(t, geminifake.Failure{Code: 503})
	for range 2 {
		require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	}
	require.Equal(t, breaker.Open, h.breaker(a).State())
	require.Equal(t, []int{2, 2}, h.counts())

	// A second agent keeps region A's model and uses the same Failover's callbacks.
	second, err := llmagent.New(llmagent.Config{Name: "second", Model: a.llm,
		BeforeModelCallbacks:  []llmagent.BeforeModelCallback{h.f.BeforeModel},
		AfterModelCallbacks:   []llmagent.AfterModelCallback{h.f.AfterModel},
		OnModelErrorCallbacks: []llmagent.OnModelErrorCallback{h.f.OnModelError}})
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: "second", Agent: second,
		SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	var finals []string
	for ev, err := range r.Run(t.Context(), "user", "s", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
		if ev.Author == "second" && !ev.Partial {
			finals = append(finals, text(ev.Content))
		}
	}
	assert.Equal(t, []string{"answer from europe-west1"}, finals)
	assert.Equal(t, []int{2, 3}, h.counts(), "the second agent never called the open region")
}

// A model call whose outcome never reaches the callbacks (a later callback
// answered instead, so adk skipped the model and every after-model callback)
// keeps its permit only until PendingTTL.
func TestPendingCallsExpire(t *testing.T) {
	a, b := twoRegions(t)
	shortCircuit := true
	answer := func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
		if !shortCircuit {
			return nil, nil
		}
		return &model.LLMResponse{Content: genai.NewContentFromText("cached answer", genai.RoleModel)}, nil
	}
	h := newHarness(t, harnessConfig{regions: []*region{a, b}, agentModelFor: func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) },
		routes: []modelfailover.Route{{Model: pro, Region: a.name}, b.route()},
		mutate: func(c *modelfailover.Config) { c.PendingTTL = time.Minute },
		agentCfg: func(c *llmagent.Config) {
			c.BeforeModelCallbacks = append(c.BeforeModelCallbacks, answer)
		}})
	res := h.turn(t.Context(), newSession(), false)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"cached answer"}, res.finals)
	assert.Equal(t, 1, h.f.Pending())
	assert.Equal(t, []int{0, 0}, h.counts())

	shortCircuit = false
	h.clock.Advance(59 * time.Second)
	require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	assert.Equal(t, 1, h.f.Pending(), "not expired yet")
	// The table is swept on a later call, at most every quarter of the TTL.
	h.clock.Advance(15 * time.Second)
	require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	assert.Zero(t, h.f.Pending())
	assert.Equal(t, []int{2, 0}, h.counts())
}

// Around the failover model adk's own callbacks keep working: after-model
// callbacks see every response with its route marker, and an on-model-error
// callback sees the failure once every route failed, and may answer it.
func TestAgentCallbacksStillRunAroundTheFailoverModel(t *testing.T) {
	a, b := twoRegions(t)
	var mu sync.Mutex
	var seen []any
	var errs []error
	h := newHarness(t, harnessConfig{regions: []*region{a, b}, agentCfg: func(c *llmagent.Config) {
		c.AfterModelCallbacks = []llmagent.AfterModelCallback{func(ctx agent.Context, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, resp.CustomMetadata[modelfailover.MetaRoute])
			return nil, nil
		}}
		c.OnModelErrorCallbacks = []llmagent.OnModelErrorCallback{func(ctx agent.Context, req *model.LLMRequest, err error) (*model.LLMResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			return &model.LLMResponse{Content: genai.NewContentFromText("sorry", genai.RoleModel)}, nil
		}}
	}})
	assert.Same(t, h.breaker(a), h.f.Routes()[0].Breaker, "the breakers are the dependency map's")

	a.fail(t, geminifake.Failure{Code: 503})
	res := h.turn(t.Context(), newSession(), true)
	require.NoError(t, res.err)
	b.fail(t, geminifake.Failure{Code: 503})
	res = h.turn(t.Context(), newSession(), false)
	require.NoError(t, res.err)
	assert.Equal(t, []string{"sorry"}, res.finals)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []any{routeB, routeB, nil}, seen, "a partial, the final, then the callback's own answer")
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], modelfailover.ErrAllRoutesFailed)
	assert.Equal(t, []int{2, 2}, h.counts())
}
