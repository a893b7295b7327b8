package transparency_test

import (
	"encoding/json"
	"strings"

	"github.com/agentbreaker/agentbreaker/docstrings"
	"github.com/agentbreaker/agentbreaker/redact"
)

// builtins are adk-go's own tools, which agentbreaker exempts (docs/failures.md,
// docs/tools.md): no sentence is allowed on them.
var builtins = map[string]bool{"transfer_to_agent": true, "exit_loop": true, "adk_request_confirmation": true}

// allowDocumented undoes, on the guarded run's normalised record, exactly the
// differences the docs state (docs/agents.md, "A healthy run"), and nothing else.
// It returns the tools whose descriptions had the sentence.
func allowDocumented(v any) (any, map[string]bool) {
	rec := v.(map[string]any)
	sentenced := map[string]bool{}
	if reqs, ok := rec["2 model requests"].(map[string]any); ok {
		for _, list := range reqs {
			for _, req := range list.([]any) {
				withoutDocstring(req, sentenced)
			}
		}
	}
	return rec, sentenced
}

// withoutDocstring removes the docstring sentence from the description of every
// declaration of a model request but adk-go's built-ins. Stated by callbacks'
// Config.Guidance.Docstring ("the sentence added to guarded tools' descriptions before
// each model call", defaulting to docstrings.Sentence) and docs/agents.md: appended
// after a blank line (docstrings.Append), once.
func withoutDocstring(req any, sentenced map[string]bool) {
	m, _ := req.(map[string]any)
	cfg, _ := m["config"].(map[string]any)
	tools, _ := cfg["tools"].([]any)
	for _, tl := range tools {
		decls, _ := tl.(map[string]any)["functionDeclarations"].([]any)
		for _, d := range decls {
			decl := d.(map[string]any)
			name, _ := decl["name"].(string)
			desc, _ := decl["description"].(string)
			if builtins[name] {
				continue
			}
			switch {
			case desc == docstrings.Sentence:
				delete(decl, "description")
			case strings.HasSuffix(desc, "\n\n"+docstrings.Sentence):
				decl["description"] = strings.TrimSuffix(desc, "\n\n"+docstrings.Sentence)
			default:
				continue
			}
			sentenced[name] = true
		}
	}
}

// cleanedAnswer turns, on the run without agentbreaker, the CRM's 404 text into what
// the model reads with it: "when the dependency answered, the model gets its answer,
// cleaned and bounded", through redact.Answer at 512 bytes (docs/failures.md, "What a
// dependency's text can reach"). The text is replaced wherever it went, as the model
// read it and as the model quoted it (JSON-escaped in its echo), and nowhere else.
func cleanedAnswer(v any) any {
	raw := notFound + "\n" // http.Error ends the body with a newline; the tool's error is the body
	clean := redact.Answer(raw, 512)
	repl := strings.NewReplacer(raw, clean, jsonInner(raw), jsonInner(clean))
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			return repl.Replace(x)
		}
		return v
	}
	return walk(v)
}

// jsonInner is s as it appears inside a JSON string.
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
