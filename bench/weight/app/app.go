// Package app is the adk-go program the weight measurements share: an agent with one
// function tool and a model that answers without a network, run once by a runner.
// It imports adk-go only; each measured program adds one layer of agentbreaker.
package app

import (
	"context"
	"fmt"
	"iter"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

type echo struct{}

func (echo) Name() string { return "echo" }

func (echo) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: genai.NewContentFromText(fmt.Sprintf("%d message(s)", len(req.Contents)), genai.RoleModel)}, nil)
	}
}

type lookupArgs struct {
	ID string `json:"id"`
}

// Run builds the agent with the given plugins and runs one turn.
func Run(plugins ...*plugin.Plugin) error {
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Looks a customer up."},
		func(_ agent.Context, a lookupArgs) (map[string]any, error) { return map[string]any{"id": a.ID}, nil })
	if err != nil {
		return err
	}
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: echo{}, Tools: []tool.Tool{lookup}})
	if err != nil {
		return err
	}
	sessions := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "weight", Agent: a, SessionService: sessions,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := sessions.Create(ctx, &session.CreateRequest{AppName: "weight", UserID: "u"})
	if err != nil {
		return err
	}
	for _, err := range r.Run(ctx, "u", s.Session.ID(), genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return err
		}
	}
	return nil
}
