package models

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

type cityArgs struct {
	City string `json:"city"`
}

// docs/failures.md: "A request that net/http refused to send because of how it was built
// is our configuration's fault ...: request_config, FAILED_BEFORE_SEND, neutral", "a
// *url.Error (what http.NewRequest and Client.Do return) whose Op is parse, or that wraps
// one of net/http's refusals", and "The same words without the *url.Error (a flattened
// error, a dependency's body) are not enough." Each tool is called 25 times in one turn,
// past the default volume gate of 20 calls.
func TestRequestConfigClass(t *testing.T) {
	cases := []struct {
		name      string
		url       string
		flatten   bool
		wantClass string
		counts    bool
	}{
		{"no scheme", "weather.example/v1?key=SECRET9", false, "request_config", false},
		{"no host", "http:///v1?key=SECRET9", false, "request_config", false},
		{"parse error", "http://[::1/v1?key=SECRET9", false, "request_config", false},
		{"no scheme, flattened", "weather.example/v1?key=SECRET9", true, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			get := func(ctx agent.Context, a cityArgs) (map[string]any, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"&city="+a.City, nil)
				if err == nil {
					var resp *http.Response
					resp, err = http.DefaultClient.Do(req)
					if err == nil {
						_ = resp.Body.Close()
						return map[string]any{"ok": true}, nil
					}
				}
				if c.flatten {
					return nil, errors.New(err.Error())
				}
				return nil, err
			}
			weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Weather."}, get)
			if err != nil {
				t.Fatal(err)
			}
			clk := clock.NewFake(t0)
			deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
				"weather-api": {Tools: []string{"get_weather"}},
			}})
			logs := &logBuf{}
			guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk,
				Observability: callbacks.Observability{Logger: slog.New(slog.NewTextHandler(logs, nil))}})
			const calls = 25
			n := 0
			m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
				n++
				if n <= calls {
					return breakertest.Call("get_weather", map[string]any{"city": "Paris"})
				}
				return breakertest.Text("done")
			}})
			a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{weather}})
			if err != nil {
				t.Fatal(err)
			}
			h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
			tr := turn(t, h)
			if !c.counts && tr.FinalText() != "done" {
				t.Fatalf("final text %q, errors %v", tr.FinalText(), tr.Errs)
			}
			var results []string
			for _, r := range m.Requests() {
				if frs := r.FunctionResponses(); len(frs) > 0 {
					b, _ := json.Marshal(frs[0].Response)
					results = append(results, string(b))
				}
			}
			if len(results) == 0 {
				t.Fatal("no tool results")
			}
			first := results[0]
			if c.wantClass != "" {
				if !strings.Contains(first, `"error_class":"`+c.wantClass+`"`) || !strings.Contains(first, "missing or invalid") {
					t.Errorf("first result %s, want class %s and the settings sentence", first, c.wantClass)
				}
			} else if strings.Contains(first, "request_config") {
				t.Errorf("a flattened error was classed request_config: %s", first)
			}
			for i, r := range results {
				if strings.Contains(r, "SECRET9") {
					t.Errorf("result %d carries the URL: %s", i, r)
				}
			}
			br, err := deps.ForTool("get_weather")
			if err != nil {
				t.Fatal(err)
			}
			snap := br.Snapshot()
			if !c.counts {
				if snap.State != breaker.Closed || snap.Window.Failures != 0 {
					t.Errorf("breaker %v with %d failures after %d misconfigured calls, want closed with none counted", snap.State, snap.Window.Failures, calls)
				}
				if strings.Contains(logs.String(), "SECRET9") {
					t.Errorf("the log carries the URL:\n%s", logs.String())
				}
				if got := strings.Count(logs.String(), "event=config_fault"); got != 1 {
					t.Errorf("%d config_fault records, want 1:\n%s", got, logs.String())
				}
			} else {
				// The page says only that the words are not request_config; how such an
				// unclassified error counts is not this page's promise, so it is logged.
				t.Logf("flattened: breaker %v, %d failures of %d calls", snap.State, snap.Window.Failures, snap.Window.Calls)
			}
		})
	}
}
