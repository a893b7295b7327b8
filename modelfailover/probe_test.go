package modelfailover_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestAFailedOverPrimaryIsProbedInTheBackground (issue 24c): the primary region
// fails, traffic moves to the fallback; a background probe (a one-token generation)
// finds the primary healthy again and the serving route returns to it with no user
// turn spent: the next turn goes to the primary, once, and nothing fails.
func TestAFailedOverPrimaryIsProbedInTheBackground(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}})
	p, err := h.f.NewProber("", probe.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer p.Close()
	ctx := t.Context()
	a.fail(t, geminifake.Failure{Code: 503})
	for range 2 {
		require.NoError(t, h.turn(ctx, newSession(), false).err)
	}
	require.Equal(t, breaker.Open, h.breaker(a).State())
	require.Equal(t, routeB, h.f.Stats().Serving.Name)
	require.Equal(t, []int{2, 2}, h.counts())

	next := p.ProbeDue(ctx)
	require.Equal(t, 30*time.Second, next.Sub(h.clock.Now()))
	h.clock.Set(next)
	// Past the cooldown a user turn does not probe the primary: it goes to B.
	require.NoError(t, h.turn(ctx, newSession(), false).err)
	require.Equal(t, []int{2, 3}, h.counts(), "no user turn is the primary's probe")
	next = p.ProbeDue(ctx)
	require.Equal(t, []int{3, 3}, h.counts(), "the background probe reached the primary and failed")
	require.Equal(t, breaker.Open, h.breaker(a).State())

	a.server.Recover()
	h.clock.Set(next)
	p.ProbeDue(ctx)
	require.Equal(t, []int{4, 3}, h.counts())
	require.Equal(t, breaker.Closed, h.breaker(a).State())
	require.Equal(t, routeA, h.f.Stats().Serving.Name, "back on the primary before any user turn")
	evs := h.events.failovers()
	require.Len(t, evs, 2)
	require.Equal(t, modelfailover.CauseProbeSucceeded, evs[1].Cause)
	require.Equal(t, routeA, evs[1].To.Name)

	res := h.turn(ctx, newSession(), false)
	require.NoError(t, res.err)
	require.Equal(t, []string{"answer from us-central1"}, res.finals)
	require.Equal(t, false, res.last.CustomMetadata[modelfailover.MetaFailover])
	require.Equal(t, []int{5, 3}, h.counts(), "the turn went to the primary once")
}
