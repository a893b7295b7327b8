package geminifake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
)

// A local endpoint that answers, then fails with a quota error asking for 40
// seconds, seen through adk-go's real Gemini model.
func Example() {
	ctx := context.Background()
	s := geminifake.MustNew(geminifake.Config{Name: "europe-west1", Reply: geminifake.Reply{Text: "Bonjour"}})
	defer s.Close()

	llm, err := gemini.NewModel(ctx, "gemini-2.5-flash", s.ClientConfig(nil))
	if err != nil {
		panic(err)
	}
	ask := func() {
		req := &model.LLMRequest{Contents: genai.Text("Say hello")}
		for resp, err := range llm.GenerateContent(ctx, req, false) {
			var apiErr genai.APIError
			if errors.As(err, &apiErr) {
				fmt.Println("error:", apiErr.Code, apiErr.Status, apiErr.Details[0]["retryDelay"])
				continue
			}
			fmt.Println("answer:", resp.Content.Parts[0].Text)
		}
	}
	ask()
	if err := s.Fail(geminifake.Failure{Code: 429, RetryDelay: 40 * time.Second}); err != nil {
		panic(err)
	}
	ask()
	fmt.Println("requests:", s.RequestsFor("gemini-2.5-flash"))
	// Output:
	// answer: Bonjour
	// error: 429 RESOURCE_EXHAUSTED 40s
	// requests: 2
}
