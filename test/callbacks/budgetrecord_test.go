package callbacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// TestBudgetExhaustedRecordCarriesTheRequestID is the regression test for the "retry
// budget exhausted" record written with request_id "": the callbacks gave the Retrier a
// context wrapped by retry.WithAdmittingState, which hid the tool context's
// InvocationID from telemetry.RetryHook.
func TestBudgetExhaustedRecordCarriesTheRequestID(t *testing.T) {
	t.Parallel()
	srv := newDropServer(t, "drop", "drop", "drop", "drop")
	rec := &callbackstest.Attempts{}
	var logs bytes.Buffer
	tel := telemetry.MustNew(telemetry.Config{Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	args := map[string]any{"sku": "A-1"}
	call := breakertest.Call("lookup_price", args)
	f := callbackstest.New(t, callbackstest.Config{
		// The default budget of a quiet dependency allows one retry: the third call is
		// refused by the budget.
		Steps: []breakertest.Step{call, call, call, breakertest.Text("done")},
		Deps:  map[string]dependencymap.Dependency{"pricing": {Tools: []string{"lookup_price"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Clock: f.Clock,
				Budgets:   retry.MustNewBudgets(retry.BudgetConfig{Clock: f.Clock}),
				OnAttempt: []func(context.Context, retry.Event){rec.Add, telemetry.RetryHook(tel)}})
		},
		ToolsOf: func(f *callbackstest.Fixture) []tool.Tool {
			return []tool.Tool{f.CB.MustWithIdempotencyKey(httpTool(t, "lookup_price", http.MethodGet, srv.URL+"/lookup"))}
		},
	})
	f.Run(t, "price of A-1?")

	recs := rec.List()
	require.NotEmpty(t, recs)
	want := recs[0].RequestID
	require.NotEmpty(t, want)
	var found int
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] != "agentbreaker: retry budget exhausted" {
			continue
		}
		found++
		require.Equal(t, want, r["request_id"], "the record names the operation: %s", line)
		require.NotEmpty(t, r["function_call_id"], "and the call the model made: %s", line)
	}
	require.Equal(t, 1, found, "one budget record:\n%s", logs.String())
}
