package breakertest

import (
	"maps"
	"slices"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// Request is a deep copy of one request a [Model] received, taken when it arrived, so
// a test can check exactly what the model was shown at each step. It shares nothing
// with the live request and is safe to read from any goroutine.
type Request struct {
	// Index numbers the requests from 0 in arrival order.
	Index int
	// Model is the model name the request asked for.
	Model string
	// Stream reports whether the request asked for streaming.
	Stream bool
	// Declarations are the function declarations of the request's tool list, in order,
	// with the descriptions as the model saw them.
	Declarations []Declaration
	// ToolNames are the names of the tools the flow can dispatch (LLMRequest.Tools),
	// sorted.
	ToolNames []string
	// Contents is the conversation sent to the model. Text, function calls and function
	// responses are copied; other part kinds are left out.
	Contents []*genai.Content
}

// Declaration is a copy of a function declaration's name and description.
type Declaration struct {
	Name        string
	Description string
}

// Declaration returns the declaration named name and whether the request had it.
func (r Request) Declaration(name string) (Declaration, bool) {
	for _, d := range r.Declarations {
		if d.Name == name {
			return d, true
		}
	}
	return Declaration{}, false
}

// FunctionResponses returns the function responses of the request's last content: the
// tool results the model is being asked to react to.
func (r Request) FunctionResponses() []*genai.FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []*genai.FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// snapshotRequest deep-copies what a test may want to inspect.
func snapshotRequest(index int, req *model.LLMRequest, stream bool) Request {
	r := Request{Index: index, Model: req.Model, Stream: stream}
	if req.Config != nil {
		for _, t := range req.Config.Tools {
			if t == nil {
				continue
			}
			for _, d := range t.FunctionDeclarations {
				if d != nil {
					r.Declarations = append(r.Declarations, Declaration{Name: d.Name, Description: d.Description})
				}
			}
		}
	}
	r.ToolNames = slices.Sorted(maps.Keys(req.Tools))
	r.Contents = make([]*genai.Content, 0, len(req.Contents))
	for _, c := range req.Contents {
		r.Contents = append(r.Contents, copyContent(c))
	}
	return r
}

func copyContent(c *genai.Content) *genai.Content {
	if c == nil {
		return nil
	}
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
	for _, p := range c.Parts {
		if p == nil {
			continue
		}
		q := &genai.Part{Text: p.Text, Thought: p.Thought}
		if fc := p.FunctionCall; fc != nil {
			q.FunctionCall = &genai.FunctionCall{ID: fc.ID, Name: fc.Name, Args: copyMap(fc.Args)}
		}
		if fr := p.FunctionResponse; fr != nil {
			q.FunctionResponse = &genai.FunctionResponse{ID: fr.ID, Name: fr.Name, Response: copyMap(fr.Response)}
		}
		out.Parts = append(out.Parts, q)
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

// copyValue copies the containers JSON-like values are built from; anything else is
// shared, which is safe for the immutable scalars tool results normally hold.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	case []string:
		return slices.Clone(v)
	}
	return v
}
