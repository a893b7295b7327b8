package openairoute_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
)

// An OpenAI-compatible primary that fails with 503, Gemini as the fallback, both
// played by local servers. Each failing call costs the OpenAI endpoint one
// request, not openai-go's three, and no turn waits on openai-go's back-off.
func Example() {
	ctx := context.Background()
	oai := openaifake.MustNew(openaifake.Config{Text: "from openai"})
	defer oai.Close()
	gem := geminifake.MustNew(geminifake.Config{Reply: geminifake.Reply{Text: "from gemini"}})
	defer gem.Close()
	_ = oai.Fail(openaifake.Failure{Code: 503})

	gpt := openairoute.MustNew(ctx, openairoute.Config{Model: "gpt-4.1",
		Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: oai.URL()}})
	flash, err := gemini.NewModel(ctx, "gemini-2.5-flash", gem.ClientConfig(modelfailover.NewTransport))
	if err != nil {
		panic(err)
	}
	fc := clock.NewFake(time.Time{})
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gpt-4.1", Region: "openai", LLM: gpt},
			{Model: "gemini-2.5-flash", Region: "gemini", LLM: flash},
		},
		Breakers: dependencymap.MustNew(dependencymap.Config{Clock: fc,
			ModelDefault: breaker.Policy{MinimumCalls: 2, Jitter: -1}}),
		Clock:  fc,
		Logger: slog.New(slog.DiscardHandler),
	})
	for range 3 {
		for resp, err := range f.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("Hi")}, false) {
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println(resp.Content.Parts[0].Text, "via", resp.CustomMetadata[modelfailover.MetaRoute])
		}
	}
	fmt.Println("requests at the OpenAI endpoint:", oai.Requests(), "retry counts:", oai.RetryCounts())
	// Output:
	// from gemini via gemini-2.5-flash@gemini
	// from gemini via gemini-2.5-flash@gemini
	// from gemini via gemini-2.5-flash@gemini
	// requests at the OpenAI endpoint: 2 retry counts: [0 0]
}
