package telemetry_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// A failover built without Breakers keeps its routes' breakers in a map of its own,
// which the wired map's breaker rows and the admin page never see; every call still
// works, so nothing else tells the user (issue 48, item 1). Wire says so in one warning
// per route, naming the setting; with Breakers set to the wired map it says nothing.
func TestWireWarnsAboutAFailoverOnAnotherMap(t *testing.T) {
	for _, shared := range []bool{false, true} {
		var logs bytes.Buffer
		tel := telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		deps := dependencymap.MustNew(dependencymap.Config{})
		cfg := modelfailover.Config{Logger: slog.New(slog.DiscardHandler), Routes: []modelfailover.Route{
			{Model: "gemini-2.5-flash", Region: "gemini", LLM: breakertest.MustNewModel(breakertest.ModelConfig{})},
			{Model: "gpt-4.1-mini", Region: "openai", LLM: breakertest.MustNewModel(breakertest.ModelConfig{})},
		}}
		if shared {
			cfg.Breakers = deps
		}
		tel.Wire(telemetry.Parts{Dependencies: deps, Failover: modelfailover.MustNew(cfg)})
		if shared {
			require.Empty(t, logs.String())
			continue
		}
		require.Equal(t, 2, bytes.Count(logs.Bytes(), []byte("set modelfailover.Config.Breakers to that map")), logs.String())
		require.Contains(t, logs.String(), "route=gemini-2.5-flash@gemini")
		require.Contains(t, logs.String(), "route=gpt-4.1-mini@openai")
	}
}
