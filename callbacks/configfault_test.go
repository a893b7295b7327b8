package callbacks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/payloads"
)

type cityArgs struct {
	City string `json:"city"`
}

// quickStartTool is the README Quick start's weather tool, shape for shape: a
// functiontool whose handler builds the URL from a base URL (there a variable,
// here api) and sends it with http.DefaultClient.
func quickStartTool(t *testing.T, api string) tool.Tool {
	t.Helper()
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather in a city."},
		func(ctx agent.Context, args cityArgs) (map[string]any, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"?city="+url.QueryEscape(args.City), nil)
			if err != nil {
				return nil, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, classify.StatusError(resp.StatusCode, 0, "")
			}
			var out map[string]any
			return out, json.NewDecoder(resp.Body).Decode(&out)
		})
	require.NoError(t, err)
	return weather
}

// runQuickStartTurns runs n turns of the Quick start's agent through adk-go's runner,
// each asking for the weather once, and returns the weather-api breaker, the log and
// the function responses the model read.
func runQuickStartTurns(t *testing.T, api string, n int) (*breaker.Breaker, string, []map[string]any) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"weather-api": {Tools: []string{"get_weather"}},
	}})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}})
	m := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, Steps: []breakertest.Step{
		breakertest.Call("get_weather", map[string]any{"city": "Paris"}), breakertest.Text("done"),
	}})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{quickStartTool(t, api)}, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
	ctx := context.Background()
	var seen []map[string]any
	for range n {
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		turn, err := h.Run(ctx, sid, "What is the weather in Paris?")
		require.NoError(t, err)
		for _, r := range turn.FunctionResponses() {
			seen = append(seen, r.Response)
		}
	}
	b, ok := deps.Get("weather-api")
	require.True(t, ok)
	return b, logs.String(), seen
}

// TestMisconfiguredURLNeverOpensTheBreaker is issue 36's first finding, as a newcomer
// hits it: the Quick start's tool with its base URL unset sends "?city=Paris", which
// net/http refuses before any connection. Fifty questions later the breaker is still
// closed, the operator was told once what is wrong, and the model got agentbreaker's
// failed payload each time (not "temporarily unavailable").
func TestMisconfiguredURLNeverOpensTheBreaker(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"", "weather.example/v1/current", "ftp://weather.example/v1"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b, logs, seen := runQuickStartTurns(t, api, 50)
			require.Equal(t, breaker.Closed, b.State(), "a misconfiguration opened the breaker")
			require.Len(t, seen, 50)
			for _, r := range seen {
				require.Equal(t, payloads.TypeFailed, r["response_type"], "%v", r)
				require.Equal(t, string(classify.ClassRequestConfig), r["error_class"])
				require.Contains(t, r["reason"], "settings for it are missing or invalid")
				require.NotContains(t, r["reason"], "unavailable")
			}
			var faults []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
				if rec["event"] == "config_fault" {
					faults = append(faults, rec)
				}
			}
			require.Len(t, faults, 1, "one record per dependency, not one per call:\n%s", logs)
			require.Equal(t, "WARN", faults[0]["level"])
			require.Equal(t, "weather-api", faults[0]["dependency"])
			require.Equal(t, "request_config", faults[0]["error_class"])
			require.Equal(t, "FAILED_BEFORE_SEND", faults[0]["outcome"])
			require.Contains(t, faults[0]["cause"], "request URL")
		})
	}
}

// TestUnreachableAPIStillOpensTheBreaker is the control: the same tool, the same
// fifty questions, a URL that is well formed but refused at the socket. That is the
// dependency's failure, and it opens the breaker.
func TestUnreachableAPIStillOpensTheBreaker(t *testing.T) {
	t.Parallel()
	b, logs, seen := runQuickStartTurns(t, "http://127.0.0.1:1/v1/current", 50)
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, payloads.TypeUnavailable, seen[len(seen)-1]["response_type"])
	require.NotContains(t, logs, "config_fault")
}

// TestMisconfiguredURLParallelCallsLogOnce: ten calls of one model response run on ten
// goroutines (adk-go's fan-out) and fail the same way at once; one record is written.
func TestMisconfiguredURLParallelCallsLogOnce(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"weather-api": {Tools: []string{"get_weather"}},
	}})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	}})
	var calls []*genai.FunctionCall
	for i := range 10 {
		calls = append(calls, &genai.FunctionCall{ID: fmt.Sprintf("c%d", i), Name: "get_weather", Args: map[string]any{"city": "Paris"}})
	}
	m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{breakertest.Calls(calls...), breakertest.Text("done")}})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{quickStartTool(t, "")}, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	turn, err := h.Run(context.Background(), sid, "weather ten times")
	require.NoError(t, err)
	require.Len(t, turn.FunctionResponses(), 10)
	for _, r := range turn.FunctionResponses() {
		require.Equal(t, string(classify.ClassRequestConfig), r.Response["error_class"])
	}
	require.Equal(t, 1, strings.Count(logs.String(), `"event":"config_fault"`), "%s", logs.String())
}
