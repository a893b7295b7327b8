package main

import (
	"strings"

	"github.com/agentbreaker/agentbreaker/breakertest"
)

// The model's answers, as it writes them.
const (
	answerDown     = "The customer system is down, so I can't look that up now. Please try again later."
	answerFailed   = "I couldn't reach the customer system just now. Please ask me again in a minute."
	answerNotFound = "There is no customer with that number."
)

// scriptedModel is a stand-in for a real model, and behaves like one: it calls a tool
// for each question, calls it again once when told the tool is unavailable (models do,
// whatever they are told), and answers without it when told firmly. It plays the same
// script with agentbreaker and without. Each request it receives is shown to s first,
// then the answer it gives.
func scriptedModel(s *story) *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{
		Name: "scripted",
		Then: func(req breakertest.Request) breakertest.Step {
			results := req.FunctionResponses()
			for _, r := range results {
				s.modelGets(r.Response)
			}
			s.flush() // a state change caused by the call just shown
			if len(results) == 0 {
				question := req.Contents[len(req.Contents)-1].Parts[0].Text
				name := "lookup_customer"
				if strings.Contains(question, "ordered") {
					name = "list_orders"
				}
				id := strings.TrimFunc(question, func(r rune) bool { return r < '0' || r > '9' })
				if i := strings.IndexByte(id, ' '); i >= 0 {
					id = id[:i]
				}
				s.modelCalls(name, id, false)
				return breakertest.Call(name, map[string]any{"query": id})
			}
			r := results[0]
			res := r.Response
			switch {
			case res["status"] == "ok":
				return s.modelSays("Customer 42: " + res["body"].(string) + ".")
			case res["firm"] == true:
				return s.modelSays(answerDown)
			case res["status"] == "unavailable":
				// The model calls again anyway, with the same arguments.
				args := req.Contents[len(req.Contents)-2].Parts[0].FunctionCall.Args
				s.modelCalls(r.Name, args["query"].(string), true)
				return breakertest.Call(r.Name, args)
			case strings.Contains(strings.ToLower(asText(res)), "no such customer"):
				return s.modelSays(answerNotFound)
			default:
				return s.modelSays(answerFailed)
			}
		},
	})
}

// asText is the result as the model reads it, roughly: every string in it.
func asText(res map[string]any) string {
	var b strings.Builder
	for _, v := range res {
		if s, ok := v.(string); ok {
			b.WriteString(s)
			b.WriteByte(' ')
		}
	}
	return b.String()
}
