package docstrings

import (
	"errors"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// Sentence is appended to the descriptions of guarded tools by default. It matches the
// "status" the payloads package writes.
const Sentence = `This tool may return status "unavailable"; when it does, tell the user and continue without it.`

// ErrEmptySentence is what the *ConfigError New returns unwraps to when
// Config.Sentence is only whitespace.
var ErrEmptySentence = errors.New("docstrings: Config.Sentence is blank")

// Append returns desc with sentence added at the end, separated by a blank line. It is
// idempotent: a description that already holds the sentence is returned unchanged, so
// applying it at every step never accumulates.
func Append(desc, sentence string) string {
	sentence = strings.TrimSpace(sentence)
	switch {
	case sentence == "" || strings.Contains(desc, sentence):
		return desc
	case strings.TrimSpace(desc) == "":
		return sentence
	}
	return strings.TrimRight(desc, " \t\n") + "\n\n" + sentence
}

// Declarations returns copies of decls with sentence appended to the description of
// every declaration include accepts (all of them when include is nil). The
// declarations passed in are never modified: tools may hand out a cached pointer, and
// editing it in place would add the sentence again at every step.
func Declarations(decls []*genai.FunctionDeclaration, sentence string, include func(name string) bool) []*genai.FunctionDeclaration {
	out := make([]*genai.FunctionDeclaration, len(decls))
	for i, d := range decls {
		if d == nil || (include != nil && !include(d.Name)) {
			out[i] = d
			continue
		}
		if desc := Append(d.Description, sentence); desc != d.Description {
			c := *d
			c.Description = desc
			d = &c
		}
		out[i] = d
	}
	return out
}

// Request applies Declarations to every function declaration of req, replacing the
// request's config and tool list with copies so nothing shared with the agent, the
// tools or earlier steps changes.
func Request(req *model.LLMRequest, sentence string, include func(name string) bool) {
	if req == nil || req.Config == nil || len(req.Config.Tools) == 0 {
		return
	}
	cfg := *req.Config
	cfg.Tools = make([]*genai.Tool, len(req.Config.Tools))
	for i, t := range req.Config.Tools {
		if t == nil || len(t.FunctionDeclarations) == 0 {
			cfg.Tools[i] = t
			continue
		}
		c := *t
		c.FunctionDeclarations = Declarations(t.FunctionDeclarations, sentence, include)
		cfg.Tools[i] = &c
	}
	req.Config = &cfg
}

// Config configures the before-model callback of [New].
type Config struct {
	// Sentence is what is appended. Defaults to [Sentence].
	Sentence string
	// Include says which tools get the sentence. Defaults to every tool; agentbreaker's
	// callbacks pass the guarded ones, leaving adk-go's built-ins alone. It may be
	// called on many goroutines at once.
	Include func(tool string) bool
}

// New returns a before-model callback that appends the sentence to the declarations of
// every request, on copies. It never short-circuits the model call.
func New(cfg Config) (llmagent.BeforeModelCallback, error) {
	if cfg.Sentence == "" {
		cfg.Sentence = Sentence
	}
	if strings.TrimSpace(cfg.Sentence) == "" {
		return nil, &ConfigError{Package: "docstrings", Field: "Config.Sentence", Value: cfg.Sentence,
			Problem: "is blank: leave it empty for the default", Err: ErrEmptySentence}
	}
	return func(_ agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
		Request(req, cfg.Sentence, cfg.Include)
		return nil, nil
	}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) llmagent.BeforeModelCallback {
	cb, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return cb
}
