package admin

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

func TestFailoverRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	us := geminifake.Start(t, geminifake.Config{Name: "us"})
	eu := geminifake.Start(t, geminifake.Config{Name: "eu"})
	llm := func(s *geminifake.Server) model.LLM {
		m, err := gemini.NewModel(ctx, "gemini-2.5-pro", s.ClientConfig(nil))
		require.NoError(t, err)
		return m
	}
	deps := dependencymap.MustNew(dependencymap.Config{ModelDefault: breaker.Policy{MinimumCalls: 1}})
	f := modelfailover.MustNew(modelfailover.Config{Breakers: deps, Logger: slog.New(slog.DiscardHandler), Routes: []modelfailover.Route{
		{Model: "gemini-2.5-pro", Region: "us-central1", LLM: llm(us)},
		{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: llm(eu)},
	}})
	routes := FailoverRoutes(f)
	require.Equal(t, []RouteStatus{
		{Model: "gemini-2.5-pro", Region: "us-central1", Primary: true, Serving: true},
		{Model: "gemini-2.5-pro", Region: "europe-west1"},
	}, routes.RouteStatus())

	require.NoError(t, us.Fail(geminifake.Failure{Code: 503}))
	for _, err := range f.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("hi")}, false) {
		require.NoError(t, err)
	}
	require.Equal(t, []RouteStatus{
		{Model: "gemini-2.5-pro", Region: "us-central1", Primary: true},
		{Model: "gemini-2.5-pro", Region: "europe-west1", Serving: true},
	}, routes.RouteStatus())
}
