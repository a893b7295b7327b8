package modelfailover

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/probe"
)

// defaultProbePrompt is the prompt of a route's probe when none is given.
const defaultProbePrompt = "ping"

// ProbeFunc returns a health check of a model: a one-token generation of prompt (a
// cheap request a healthy endpoint answers in milliseconds), non-streaming. Its
// errors are classified by cls (nil: the default rules); an answer without any
// response is a failure.
func ProbeFunc(llm model.LLM, modelName, prompt string, cls *classify.Classifier) probe.Func {
	if prompt == "" {
		prompt = defaultProbePrompt
	}
	return func(ctx context.Context) error {
		req := &model.LLMRequest{
			Model:    modelName,
			Contents: []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)},
			Config:   &genai.GenerateContentConfig{MaxOutputTokens: 1},
		}
		answered := false
		for resp, err := range llm.GenerateContent(ctx, req, false) {
			if err != nil {
				in := classify.Input{Context: ctx, Err: err}
				c := classify.Classify(in)
				if cls != nil {
					c = cls.Classify(in)
				}
				return &probe.ClassifiedError{Classification: c, Err: err}
			}
			answered = answered || resp != nil
		}
		if !answered {
			return errors.New("modelfailover: probe: the model returned no response")
		}
		return nil
	}
}

// NewProber returns a Prober that probes every route of f in the background (a
// one-token generation of prompt, see ProbeFunc) while its breaker refuses calls,
// on top of cfg's own checks; when a probe closes a route's breaker, the serving
// route is re-derived at once, so traffic returns to the primary without a user's
// turn paying for the first try (the change is announced with
// CauseProbeSucceeded). cfg's nil Clock takes the Failover's. From then on, user
// calls never probe these routes: a route whose breaker is open is skipped until a
// probe closes it.
func (f *Failover) NewProber(prompt string, cfg probe.Config) (*probe.Prober, error) {
	if cfg.Clock == nil {
		cfg.Clock = f.clk
	}
	checks := append([]probe.Check(nil), cfg.Checks...)
	for _, r := range f.routes {
		llm := r.LLM
		if llm == nil {
			llm = f.routes[0].LLM
		}
		if llm == nil {
			return nil, fmt.Errorf("modelfailover: route %s: no model to probe (Routes[0].LLM is nil)", r.Name)
		}
		checks = append(checks, probe.Check{Breaker: r.b, Name: "generate " + r.Model, Func: ProbeFunc(llm, r.Model, prompt, f.cls)})
	}
	cfg.Checks = checks
	cfg.OnResult = append(append([]func(probe.Result){}, cfg.OnResult...), f.onProbeResult)
	return probe.New(cfg)
}

// onProbeResult re-derives the serving route after a probe of one of f's routes.
func (f *Failover) onProbeResult(res probe.Result) {
	for _, r := range f.routes {
		if r.b.Name() == res.Dependency {
			var probed *route
			if res.Healthy {
				probed = r
			}
			f.refresh(context.Background(), probed)
			return
		}
	}
}
