package openairoute

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ErrNoModel is what the *ConfigError New returns unwraps to when Config.Model is
// empty.
var ErrNoModel = errors.New("openairoute: Config.Model is required")

// Config configures New.
type Config struct {
	// Model is the model name sent to the API ("gpt-4.1"). Required.
	Model string
	// Client is openaimodel's client configuration: APIKey, BaseURL (any
	// OpenAI-compatible endpoint), HTTPClient and Options. Its HTTPClient (nil
	// means a new one over http.DefaultTransport) is copied, never changed, and
	// the copy's transport is wrapped. Defaults to the zero ClientConfig
	// (openai-go reads OPENAI_API_KEY and OPENAI_BASE_URL).
	Client openaimodel.ClientConfig
	// Failover, when set, is the Failover whose callbacks serve the agent that has
	// this model as its own: its transport is Failover.Transport and the model is
	// wrapped with modelfailover.CallScoped, so each request of a call finds its
	// attempt. Leave it nil for a model put in a Route's LLM. Defaults to nil.
	Failover *modelfailover.Failover
}

// New returns the OpenAI-compatible model for cfg, with openai-go's retries off
// and its requests sent through agentbreaker's model transport.
func New(ctx context.Context, cfg Config) (model.LLM, error) {
	if cfg.Model == "" {
		return nil, &ConfigError{Package: "openairoute", Field: "Config.Model", Value: cfg.Model, Problem: "is required", Err: ErrNoModel}
	}
	wrap := modelfailover.NewTransport
	if cfg.Failover != nil {
		wrap = cfg.Failover.Transport
	}
	cc := cfg.Client
	hc := &http.Client{}
	if cc.HTTPClient != nil {
		c := *cc.HTTPClient
		hc = &c
	}
	hc.Transport = wrap(hc.Transport) // nil means http.DefaultTransport
	cc.HTTPClient = hc
	// Last, so that it overrides a WithMaxRetries among the caller's options.
	cc.Options = append(slices.Clip(cc.Options), option.WithMaxRetries(0))
	llm, err := openaimodel.NewModel(ctx, cfg.Model, &cc)
	if err != nil {
		return nil, err
	}
	if cfg.Failover != nil {
		return modelfailover.CallScoped(llm), nil
	}
	return llm, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(ctx context.Context, cfg Config) model.LLM {
	llm, err := New(ctx, cfg)
	if err != nil {
		panic(err)
	}
	return llm
}
