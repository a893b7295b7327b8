// Command quickstart is the README's Quick start, whole: an adk-go agent on Gemini
// whose weather tool is guarded by agentbreaker. Run it with GOOGLE_API_KEY set:
//
//	go run ./examples/quickstart "What is the weather in Paris?"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
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

func main() {
	ctx := context.Background()
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather in a city."}, getWeather)
	if err != nil {
		log.Fatal(err)
	}

	// One breaker per dependency: every tool that calls the weather API shares it.
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"weather-api": {Tools: []string{"get_weather"}},
	}})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps})

	llm, err := gemini.NewModel(ctx, "gemini-2.5-flash", &genai.ClientConfig{APIKey: os.Getenv("GOOGLE_API_KEY")})
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
	question := genai.NewContentFromText(strings.Join(os.Args[1:], " "), genai.RoleUser)
	for ev, err := range r.Run(ctx, "user", s.Session.ID(), question, agent.RunConfig{}) {
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
