package breakertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the error NewModel, NewHarness and NewHTTPTool return for an invalid
// value.
type ConfigError = agentbreaker.ConfigError

// ErrScriptExhausted is returned by a [Model] asked for more answers than its script
// holds and with no ModelConfig.Then to fall back on.
var ErrScriptExhausted = errors.New("breakertest: model script exhausted")

// Step is one scripted model answer: a response, an error, or a function that decides
// from the request. Exactly one of Response, Err and Func should be set.
type Step struct {
	Response *model.LLMResponse
	Err      error
	// Func computes the answer from the request the model received, for scripts that
	// react to what the tools returned.
	Func func(Request) Step
}

// ModelConfig configures a scripted [Model].
type ModelConfig struct {
	// Name is what Model.Name returns. Defaults to "scripted-model".
	Name string
	// Steps are the answers, one per request, in order.
	Steps []Step
	// Then answers every request after Steps run out. Defaults to failing with
	// ErrScriptExhausted, so a test notices an agent that calls the model too often.
	Then func(Request) Step
	// Repeat starts Steps over when they run out, instead of Then; for benchmarks and
	// soak tests that run the same turn many times. Defaults to false.
	Repeat bool
	// DiscardRequests stops the model from keeping copies of the requests (for
	// benchmarks and long soak tests); Requests then returns nil and only Calls counts.
	// Defaults to false: every request is recorded.
	DiscardRequests bool
}

// Model is a model.LLM that answers from a script and records every request it
// receives. It never touches the network. It is safe for concurrent use; requests are
// numbered in the order they arrive.
type Model struct {
	cfg ModelConfig

	mu       sync.Mutex
	calls    int
	requests []Request
}

// NewModel returns a scripted model. A Step with none or more than one of Response,
// Err and Func set is rejected with an error naming its index.
func NewModel(cfg ModelConfig) (*Model, error) {
	if cfg.Name == "" {
		cfg.Name = "scripted-model"
	}
	if cfg.Repeat && (len(cfg.Steps) == 0 || cfg.Then != nil) {
		return nil, &ConfigError{Package: "breakertest", Field: "ModelConfig.Repeat", Value: cfg.Repeat, Problem: "needs Steps and no Then"}
	}
	for i, s := range cfg.Steps {
		if n := s.set(); n != 1 {
			return nil, &ConfigError{Package: "breakertest", Field: fmt.Sprintf("ModelConfig.Steps[%d]", i), Value: s,
				Problem: fmt.Sprintf("%d of Response, Err and Func are set, want exactly 1", n)}
		}
	}
	cfg.Steps = slices.Clone(cfg.Steps)
	return &Model{cfg: cfg}, nil
}

// MustNewModel is NewModel for scripts known to be valid; it panics on error.
func MustNewModel(cfg ModelConfig) *Model {
	m, err := NewModel(cfg)
	if err != nil {
		panic(err)
	}
	return m
}

func (s Step) set() int {
	n := 0
	if s.Response != nil {
		n++
	}
	if s.Err != nil {
		n++
	}
	if s.Func != nil {
		n++
	}
	return n
}

// Name implements model.LLM.
func (m *Model) Name() string { return m.cfg.Name }

// GenerateContent implements model.LLM: it records the request and yields the next
// scripted answer as one complete (non-partial) response, streaming or not.
func (m *Model) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.mu.Lock()
		index := m.calls
		m.calls++
		m.mu.Unlock()
		r := Request{Index: index, Stream: stream}
		if !m.cfg.DiscardRequests || m.stepNeedsRequest(index) {
			r = snapshotRequest(index, req, stream)
		}
		if !m.cfg.DiscardRequests {
			m.mu.Lock()
			m.requests = append(m.requests, r)
			m.mu.Unlock()
		}
		step := m.step(index, r)
		for i := 0; step.Func != nil; i++ {
			if i == 100 {
				yield(nil, fmt.Errorf("breakertest: step %d: Func chain deeper than 100", index))
				return
			}
			step = step.Func(r)
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		switch {
		case step.Err != nil:
			yield(nil, step.Err)
		case step.Response != nil:
			resp := *step.Response
			resp.Content = copyContent(resp.Content) // the flow edits function call IDs in place
			yield(&resp, nil)
		default:
			yield(nil, fmt.Errorf("breakertest: step %d is empty", index))
		}
	}
}

// stepNeedsRequest reports whether the answer to request index is computed from it.
func (m *Model) stepNeedsRequest(index int) bool {
	if m.cfg.Repeat {
		index %= len(m.cfg.Steps)
	}
	if index < len(m.cfg.Steps) {
		return m.cfg.Steps[index].Func != nil
	}
	return m.cfg.Then != nil
}

func (m *Model) step(index int, r Request) Step {
	if m.cfg.Repeat {
		index %= len(m.cfg.Steps)
	}
	if index < len(m.cfg.Steps) {
		return m.cfg.Steps[index]
	}
	if m.cfg.Then != nil {
		return m.cfg.Then(r)
	}
	return Step{Err: fmt.Errorf("%w: request %d, script has %d steps", ErrScriptExhausted, index, len(m.cfg.Steps))}
}

// Calls returns how many requests the model has received.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Requests returns the recorded requests in arrival order. The caller owns the slice;
// the requests themselves are deep copies that later steps cannot change.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// Text answers with plain text, ending the agent's turn.
func Text(text string) Step {
	return Step{Response: &model.LLMResponse{
		Content:      genai.NewContentFromText(text, genai.RoleModel),
		TurnComplete: true,
	}}
}

// Call answers with one function call. adk-go gives it an ID.
func Call(name string, args map[string]any) Step {
	return Calls(&genai.FunctionCall{Name: name, Args: args})
}

// Calls answers with several function calls in one response; adk-go runs them
// concurrently. Calls without an ID get one from adk-go; IDs given here are passed
// through unchanged, repeats included.
func Calls(calls ...*genai.FunctionCall) Step {
	parts := make([]*genai.Part, len(calls))
	for i, c := range calls {
		parts[i] = &genai.Part{FunctionCall: c}
	}
	return Step{Response: &model.LLMResponse{
		Content: &genai.Content{Role: genai.RoleModel, Parts: parts},
	}}
}

// Fail answers with an error, as a model API failure would.
func Fail(err error) Step { return Step{Err: err} }
