package refusals_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// A model that re-issues a call the dependency refused is told the call failed and a
// repeat will not help, never that a retry budget is used up: no budget was spent
// (the retry orchestrator stops the operation as not retryable). The tool runs once.
func TestReissuedRefusalIsToldFailedNotBudget(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"crm_lookup"}, Policy: policy},
	}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk,
		SideEffects: callbacks.SideEffects{Retry: retry.MustNew(retry.Config{Clock: clk})}})
	var ran atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Looks a customer up."},
		func(agent.Context, map[string]any) (map[string]any, error) {
			ran.Add(1)
			return map[string]any{"status": "error", "error": refusalWords}, nil
		})
	require.NoError(t, err)
	args := map[string]any{"customer": "ACME-42"}
	var answers []map[string]any
	model := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
		rs := req.FunctionResponses()
		if len(rs) > 0 {
			answers = append(answers, rs[len(rs)-1].Response)
		}
		if len(answers) < 2 {
			return breakertest.Call("crm_lookup", args) // the same call again
		}
		return breakertest.Text("That customer does not exist.")
	}})
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{lookup}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	_, err = h.Run(ctx, sid, "Look up ACME-42.")
	require.NoError(t, err)
	require.Len(t, answers, 2)
	require.Equal(t, int64(1), ran.Load(), "the re-issue is not sent")
	second := answers[1]
	require.Equal(t, payloads.TypeFailed, second[payloads.KeyResponseType], "%v", second)
	require.NotContains(t, strings.ToLower(second[payloads.KeyReason].(string)), "budget", "%v", second)
}
