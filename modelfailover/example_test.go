package modelfailover_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// Two regions of one model, played by local servers. The primary fails, calls
// move to the backup, the change is announced once when the primary's breaker
// opens, and after the cooldown one probe brings them back.
func Example() {
	ctx := context.Background()
	iowa := geminifake.MustNew(geminifake.Config{Name: "us-central1", Reply: geminifake.Reply{Text: "Hello from Iowa"}})
	defer iowa.Close()
	belgium := geminifake.MustNew(geminifake.Config{Name: "europe-west1", Reply: geminifake.Reply{Text: "Hello from Belgium"}})
	defer belgium.Close()
	geminiAt := func(s *geminifake.Server) model.LLM {
		// NewTransport lets a Retry-After header reach the breaker.
		llm, err := gemini.NewModel(ctx, "gemini-2.5-pro", s.ClientConfig(modelfailover.NewTransport))
		if err != nil {
			panic(err)
		}
		return llm
	}

	fc := clock.NewFake(time.Time{})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc,
		ModelDefault: breaker.Policy{MinimumCalls: 2, Jitter: -1}})
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: "us-central1", LLM: geminiAt(iowa)},
			{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: geminiAt(belgium)},
		},
		Breakers: deps,
		Clock:    fc,
		Logger:   slog.New(slog.DiscardHandler), // a warning per failover goes here
		OnFailover: func(e modelfailover.Event) {
			fmt.Printf("failover %s -> %s (%s)\n", e.From.Name, e.To.Name, e.Cause)
		},
	})

	ask := func() {
		req := &model.LLMRequest{Contents: genai.Text("Hi")}
		for resp, err := range f.GenerateContent(ctx, req, false) {
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Printf("%s [%s]\n", resp.Content.Parts[0].Text, resp.CustomMetadata[modelfailover.MetaRoute])
		}
	}
	if err := iowa.Fail(geminifake.Failure{Code: 503}); err != nil {
		panic(err)
	}
	ask() // a per-call fallback: counted, not announced (the breaker is closed)
	ask() // the second failure opens the primary's breaker: the one announcement
	ask() // the primary's breaker is open now: no request goes to it
	fmt.Println("requests:", iowa.RequestsFor("gemini-2.5-pro"), belgium.RequestsFor("gemini-2.5-pro"))

	iowa.Recover()
	fc.Advance(time.Minute)
	ask()
	fmt.Printf("served by a fallback: %.0f%%\n", 100*f.Stats().Window.FallbackShare)
	// Output:
	// Hello from Belgium [gemini-2.5-pro@europe-west1]
	// failover gemini-2.5-pro@us-central1 -> gemini-2.5-pro@europe-west1 (http_5xx)
	// Hello from Belgium [gemini-2.5-pro@europe-west1]
	// Hello from Belgium [gemini-2.5-pro@europe-west1]
	// requests: 2 3
	// failover gemini-2.5-pro@europe-west1 -> gemini-2.5-pro@us-central1 (probe_succeeded)
	// Hello from Iowa [gemini-2.5-pro@us-central1]
	// served by a fallback: 75%
}

// An agent that keeps its own model registers the failover's callbacks; a
// fallback with its own model answers when the agent's model fails.
func ExampleFailover_BeforeModel() {
	ctx := context.Background()
	primary := geminifake.MustNew(geminifake.Config{Name: "us-central1"})
	defer primary.Close()
	backup := geminifake.MustNew(geminifake.Config{Name: "europe-west1", Reply: geminifake.Reply{Text: "Bonjour"}})
	defer backup.Close()
	own, err := gemini.NewModel(ctx, "gemini-2.5-pro", primary.ClientConfig(modelfailover.NewTransport))
	if err != nil {
		panic(err)
	}
	fallback, err := gemini.NewModel(ctx, "gemini-2.5-pro", backup.ClientConfig(modelfailover.NewTransport))
	if err != nil {
		panic(err)
	}
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: "us-central1"}, // served by the agent's own model
			{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: fallback},
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	a, err := llmagent.New(llmagent.Config{
		Name:                  "assistant",
		Model:                 own,
		BeforeModelCallbacks:  []llmagent.BeforeModelCallback{f.BeforeModel},
		AfterModelCallbacks:   []llmagent.AfterModelCallback{f.AfterModel},
		OnModelErrorCallbacks: []llmagent.OnModelErrorCallback{f.OnModelError},
	})
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: a,
		SessionService: session.InMemoryService(), AutoCreateSession: true})
	if err != nil {
		panic(err)
	}
	if err := primary.Fail(geminifake.Failure{Code: 503}); err != nil {
		panic(err)
	}
	for ev, err := range r.Run(ctx, "user", "s1", genai.NewContentFromText("Hi", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		if ev.Author == "assistant" {
			fmt.Println(ev.Content.Parts[0].Text, ev.CustomMetadata[modelfailover.MetaFailover])
		}
	}
	// Output:
	// Bonjour true
}
