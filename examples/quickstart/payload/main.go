// Command payload prints what the model of the Quick start (examples/quickstart) reads
// once the weather API's breaker has opened. README.md shows its output, and test/docs
// keeps the two equal.
//
// It runs the Quick start's tool, guarded the same way, through adk-go's runner, one
// question per turn within one process, against a local weather API that answers 503.
// The model is a scripted stand-in (no network, no API key) and the breaker runs on a
// fake clock with a seeded jitter, so the output is the same on every run:
//
//	go run ./examples/quickstart/payload
//
// A run of the Quick start itself asks one question per process: its breaker is new
// each time and never passes the volume gate, so it only ever shows the failed payload.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
)

type weatherArgs struct {
	City string `json:"city"`
}

// getWeather is the Quick start's tool, word for word (test/readme checks it).
func getWeather(ctx agent.Context, args weatherArgs) (map[string]any, error) {
	api := os.Getenv("WEATHER_API_URL") // for example https://weather.example/v1/current
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
}

// gap is the time between two questions, on the fake clock.
const gap = time.Second

func main() {
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer api.Close()
	os.Setenv("WEATHER_API_URL", api.URL)

	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather in a city."}, getWeather)
	if err != nil {
		log.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	seeded := rand.New(rand.NewPCG(36, 1))
	// The Quick start's configuration, plus the clock and the jitter's seed.
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fake, Rand: seeded.Float64,
		Dependencies: map[string]dependencymap.Dependency{"weather-api": {Tools: []string{"get_weather"}}}})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fake})

	model := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, DiscardRequests: true, Steps: []breakertest.Step{
		breakertest.Call("get_weather", map[string]any{"city": "Paris"}),
		breakertest.Text("The weather service is not answering right now."),
	}})
	assistant, err := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{weather}})
	if err != nil {
		log.Fatal(err)
	}
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: assistant, Plugins: []*plugin.Plugin{guard.Plugin()}})
	b, _ := deps.Get("weather-api")

	ctx := context.Background()
	var before []string // what the model read before the breaker opened
	for q := 1; q <= 2*breaker.DefaultMinimumCalls; q++ {
		sent := calls.Load()
		answer := ask(ctx, h)
		kind, _ := answer["response_type"].(string)
		if kind != payloads.TypeUnavailable {
			if !slices.Contains(before, kind) {
				before = append(before, kind)
			}
			fake.Advance(gap)
			continue
		}
		fmt.Printf("questions 1 to %d: the weather API was called %d times and answered 503; the model read %s\n",
			q-1, sent, strings.Join(before, ", "))
		p := b.Policy()
		fmt.Printf("the breaker opened at the volume gate (Policy.MinimumCalls = %d), for its %s cooldown plus up to %.0f%% jitter\n",
			p.MinimumCalls, p.Cooldown, 100*p.Jitter)
		called := "was not called"
		if n := calls.Load() - sent; n > 0 {
			called = fmt.Sprintf("was called %d times", n)
		}
		fmt.Printf("question %d, %s later: the API %s; the model read:\n", q, gap, called)
		show(answer)
		return
	}
	log.Fatalf("the breaker did not open in %d questions", 2*breaker.DefaultMinimumCalls)
}

// ask runs one question in a new session and returns the tool's answer as the model
// read it.
func ask(ctx context.Context, h *breakertest.Harness) map[string]any {
	sid, err := h.NewSession(ctx)
	if err != nil {
		log.Fatal(err)
	}
	turn, err := h.Run(ctx, sid, "What is the weather in Paris?")
	if err != nil {
		log.Fatal(err)
	}
	rs := turn.FunctionResponses()
	if len(rs) != 1 {
		log.Fatalf("%d function responses, want 1", len(rs))
	}
	return rs[0].Response
}

// order is how the README lays out a payload's keys: what it is, then why, then what
// to do. Keys not listed follow, sorted.
var order = []string{"response_type", "status", "dependency", "tool", "error_class", "reason",
	"retry_advised", "retry_after_seconds", "instruction"}

// show prints p as JSON, one key per line, in order.
func show(p map[string]any) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range p {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		v, err := json.Marshal(p[k])
		if err != nil {
			log.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("  %q: %s", k, v))
	}
	fmt.Printf("{\n%s\n}\n", strings.Join(lines, ",\n"))
}

func rank(k string) int {
	if i := slices.Index(order, k); i >= 0 {
		return i
	}
	return len(order)
}
