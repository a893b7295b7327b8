package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// planner is the agent's model. Every step goes to the model servers through the
// failover (real genai and openai-go clients over HTTP), so the model's availability is
// theirs; what the model decides is scripted from the user's message, because the fake
// servers cannot choose tools: "kind=<k> op=<id>".
type planner struct {
	failover *modelfailover.Failover
	obs      *observer
}

func (p *planner) Name() string { return "soak-planner" }

func (p *planner) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		p.obs.scanModelRequest(req)
		var text strings.Builder
		for resp, err := range p.failover.GenerateContent(ctx, req, false) {
			if err != nil {
				yield(nil, err)
				return
			}
			if resp != nil && resp.Content != nil {
				for _, part := range resp.Content.Parts {
					text.WriteString(part.Text)
				}
			}
		}
		said := text.String()
		if !strings.Contains(said, "says ok") {
			// The failover's own answer (every route refused): no model decided anything.
			p.obs.unavailableAnswers.Add(1)
			yield(&model.LLMResponse{Content: genai.NewContentFromText(said, genai.RoleModel)}, nil)
			return
		}
		calls := nextCalls(req)
		if len(calls) == 0 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("Done. "+said, genai.RoleModel)}, nil)
			return
		}
		parts := make([]*genai.Part, len(calls))
		for i, c := range calls {
			parts[i] = &genai.Part{FunctionCall: c}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}, nil)
	}
}

// nextCalls returns the calls of the turn's next step, or none when it is over.
func nextCalls(req *model.LLMRequest) []*genai.FunctionCall {
	kind, op := "", ""
	start := -1
	for i, c := range req.Contents {
		if c == nil || c.Role != genai.RoleUser {
			continue
		}
		for _, part := range c.Parts {
			if strings.HasPrefix(part.Text, "kind=") {
				_, _ = fmt.Sscanf(part.Text, "kind=%s op=%s", &kind, &op)
				start = i
			}
		}
	}
	if start < 0 {
		return nil
	}
	steps := 0
	responses := map[string][]map[string]any{}
	for _, c := range req.Contents[start+1:] {
		if c == nil {
			continue
		}
		called := false
		for _, part := range c.Parts {
			if part.FunctionCall != nil {
				called = true
			}
			if fr := part.FunctionResponse; fr != nil {
				responses[fr.Name] = append(responses[fr.Name], fr.Response)
			}
		}
		if called {
			steps++
		}
	}
	call := func(name string, args map[string]any) *genai.FunctionCall {
		return &genai.FunctionCall{Name: name, Args: args}
	}
	placeOrder := call("place_order", map[string]any{"op": op})
	transfer := call("transfer", map[string]any{"op": op, "amount": 10})
	// reissue repeats a mutation once when its answer was not a success, as models do.
	reissue := func(name, okKey string, c *genai.FunctionCall) []*genai.FunctionCall {
		rs := responses[name]
		if len(rs) == 1 && !succeeded(rs[0], okKey) {
			return []*genai.FunctionCall{c}
		}
		return nil
	}
	switch kind {
	case "orders":
		switch steps {
		case 0:
			return []*genai.FunctionCall{call("lookup_order", map[string]any{"query": op})}
		case 1:
			return []*genai.FunctionCall{placeOrder}
		case 2:
			return reissue("place_order", "placed", placeOrder)
		}
	case "ledger":
		switch steps {
		case 0:
			return []*genai.FunctionCall{call("get_balance", map[string]any{"account": "acc-" + op})}
		case 1:
			return []*genai.FunctionCall{transfer}
		case 2:
			return reissue("transfer", "transferred", transfer)
		}
	case "billing":
		if steps == 0 {
			return []*genai.FunctionCall{call("billing_agent", map[string]any{"request": "Was invoice 42 paid?"})}
		}
	case "mixed":
		switch steps {
		case 0:
			return []*genai.FunctionCall{
				call("lookup_order", map[string]any{"query": op}),
				call("get_balance", map[string]any{"account": "acc-" + op}),
				call("billing_agent", map[string]any{"request": "Was invoice 42 paid?"}),
			}
		case 1:
			return []*genai.FunctionCall{placeOrder, transfer}
		}
	}
	return nil
}

// succeeded reports whether a tool's answer is the service's success (okKey set to
// true at the top level or under "output", where MCP results sit).
func succeeded(resp map[string]any, okKey string) bool {
	if v, _ := resp[okKey].(bool); v {
		return true
	}
	if out, ok := resp["output"].(map[string]any); ok {
		v, _ := out[okKey].(bool)
		return v
	}
	return false
}

// contentsJSON renders what a model request carries, for the leak scan.
func contentsJSON(req *model.LLMRequest) string {
	b, _ := json.Marshal(req.Contents)
	s := string(b)
	if req.Config != nil && req.Config.SystemInstruction != nil {
		si, _ := json.Marshal(req.Config.SystemInstruction)
		s += string(si)
	}
	return s
}
