package transparency_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// scripted is a model.LLM that answers from the request alone (the same request gets
// the same answer in both runs) and records every request whole: the conversation,
// the system instruction, the declarations with their descriptions, the tools the
// flow can dispatch, and whether it streamed.
type scripted struct {
	name   string
	answer func(req *model.LLMRequest) *genai.Content

	mu   sync.Mutex
	reqs []any
}

func newModel(name string, answer func(req *model.LLMRequest) *genai.Content) *scripted {
	return &scripted{name: name, answer: answer}
}

func (m *scripted) Name() string { return m.name }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	tools := make([]string, 0, len(req.Tools))
	for name := range req.Tools {
		tools = append(tools, name)
	}
	slices.Sort(tools)
	rec := map[string]any{"model": m.name, "llm_model": req.Model, "stream": stream, "contents": req.Contents, "config": req.Config, "tools": tools}
	b, err := json.Marshal(rec)
	var v any
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		v = "unmarshalable request: " + err.Error()
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, v)
	m.mu.Unlock()
	content := m.answer(req)
	return func(yield func(*model.LLMResponse, error) bool) {
		text := textOf(content)
		if stream && text != "" {
			// Two partial chunks, then the aggregated answer, as a streaming model does.
			half := len(text) / 2
			for _, chunk := range []string{text[:half], text[half:]} {
				if !yield(&model.LLMResponse{Content: genai.NewContentFromText(chunk, genai.RoleModel), Partial: true}, nil) {
					return
				}
			}
		}
		yield(&model.LLMResponse{Content: content, TurnComplete: true}, nil)
	}
}

func (m *scripted) requests() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func textOf(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil && p.FunctionCall == nil {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// lastResponses returns the function responses of the request's last content, if it
// holds any.
func lastResponses(req *model.LLMRequest) []*genai.FunctionResponse {
	if len(req.Contents) == 0 {
		return nil
	}
	var out []*genai.FunctionResponse
	for _, p := range req.Contents[len(req.Contents)-1].Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// say answers with text.
func say(text string) *genai.Content { return genai.NewContentFromText(text, genai.RoleModel) }

// call answers with function calls, each a name and its arguments.
func call(calls ...*genai.FunctionCall) *genai.Content {
	c := &genai.Content{Role: genai.RoleModel}
	for _, fc := range calls {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
	}
	return c
}

func fc(name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{Name: name, Args: args}
}

// echo says what the tools returned, so a difference in a tool's result reaches the
// model's answer, the events and the session too.
func echo(prefix string, rs []*genai.FunctionResponse) *genai.Content {
	b, _ := json.Marshal(rs)
	return say(prefix + string(b))
}

// toolThenEcho calls the tools of calls on a user message and echoes their results
// once they are back.
func toolThenEcho(prefix string, calls ...*genai.FunctionCall) func(*model.LLMRequest) *genai.Content {
	return func(req *model.LLMRequest) *genai.Content {
		if rs := lastResponses(req); len(rs) > 0 {
			return echo(prefix, rs)
		}
		cp := make([]*genai.FunctionCall, len(calls))
		for i, c := range calls {
			x := *c
			cp[i] = &x
		}
		return call(cp...)
	}
}
