// Command quickstart is the README's Quick start, whole: an adk-go agent on Gemini
// whose weather tool is guarded by agentbreaker. Run it with an API key in
// GOOGLE_API_KEY or GEMINI_API_KEY (genai reads either) and WEATHER_API_URL set:
//
//	go run ./examples/quickstart "What is the weather in Paris?"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

type weatherArgs struct {
	City string `json:"city"`
}

// getWeather calls the weather API. A status it cannot use becomes a typed error,
// so agentbreaker knows a 503 (counts) from a 404 (the API works).
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

// missing says in one line what the program needs and was not given, or "".
func missing(question string) string {
	var m []string
	if os.Getenv("GOOGLE_API_KEY") == "" && os.Getenv("GEMINI_API_KEY") == "" {
		m = append(m, "an API key in GOOGLE_API_KEY or GEMINI_API_KEY")
	}
	if os.Getenv("WEATHER_API_URL") == "" {
		m = append(m, "the weather API's URL in WEATHER_API_URL")
	}
	if question == "" {
		m = append(m, `a question (quickstart "What is the weather in Paris?")`)
	}
	if len(m) == 0 {
		return ""
	}
	return "quickstart: missing " + strings.Join(m, "; ")
}

func main() {
	question := strings.TrimSpace(strings.Join(os.Args[1:], " "))
	if m := missing(question); m != "" {
		fmt.Fprintln(os.Stderr, m)
		os.Exit(2)
	}
	ctx := context.Background()
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather in a city."}, getWeather)
	if err != nil {
		log.Fatal(err)
	}

	// One breaker per dependency: every tool that calls the weather API shares it.
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"weather-api": {Tools: []string{"get_weather"}},
	}})
	// Its records (a failed call, a misconfigured URL) go to stderr.
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Logger: slog.Default()}})

	// genai reads the API key from GOOGLE_API_KEY or GEMINI_API_KEY.
	llm, err := gemini.NewModel(ctx, "gemini-2.5-flash", &genai.ClientConfig{Backend: genai.BackendGeminiAPI})
	if err != nil {
		log.Fatal(err)
	}
	assistant, err := llmagent.New(llmagent.Config{
		Name: "assistant", Model: llm, Tools: []tool.Tool{weather},
		Instruction: "Answer questions about the weather with the get_weather tool.",
	})
	if err != nil {
		log.Fatal(err)
	}
	sessions := session.InMemoryService()
	r, err := runner.New(runner.Config{
		AppName: "quickstart", Agent: assistant, SessionService: sessions,
		// agentbreaker first, so that it sees every tool error (docs/tools.md).
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := sessions.Create(ctx, &session.CreateRequest{AppName: "quickstart", UserID: "user"})
	if err != nil {
		log.Fatal(err)
	}
	msg := genai.NewContentFromText(question, genai.RoleUser)
	for ev, err := range r.Run(ctx, "user", s.Session.ID(), msg, agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Content != nil && ev.Author == "assistant" {
			for _, p := range ev.Content.Parts {
				if p.Text != "" {
					fmt.Println(p.Text)
				}
			}
		}
	}
}
